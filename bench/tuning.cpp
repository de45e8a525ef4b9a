#include "tuning.hpp"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>

namespace bench {

std::vector<vkgmm::Tiling> sweep_candidates() {
  // Output blocks of 16 to 128 rows by 32 to 128 columns, K steps of 32 to 128: the range where either
  // schedule keeps its accumulators per invocation within the limit (256) without tiny tiles. Then the
  // direct schedule's shapes (its K step is unused): 128-column blocks of 1 to 128 rows, blocks of whole
  // weight rows of up to 1024 columns for visits of a few rows (decode), and a GPU's decode tiles, 32
  // columns of 1 to 8 rows with the reduction split over the workgroup, whose rows per visit the library
  // picks from an overhead no GPU has measured (host/tiling.cpp, kGpuDecodeVisitOverheadRows).
  return {{64, 64, 64},  {32, 64, 64},  {64, 64, 32},  {16, 64, 64},   {128, 64, 64}, {64, 64, 128},
          {128, 64, 128}, {64, 32, 64}, {64, 128, 64}, {32, 128, 128}, {128, 32, 32},
          {128, 4, 128},  {64, 4, 128}, {32, 4, 128},  {16, 4, 128},   {4, 4, 128},   {2, 4, 128},
          {4, 4, 256},    {4, 4, 512},  {2, 4, 512},   {2, 4, 1024},   {1, 4, 1024},
          {1, 4, 32},     {2, 4, 32},   {4, 4, 32},    {8, 4, 32}};
}

std::filesystem::path cache_path(const std::string& device_name) {
  std::filesystem::path dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = std::filesystem::path(h) / ".cache";
  else
    return {};
  // Device names hold spaces, parentheses and the like: keep a file-name-safe spelling.
  std::string safe;
  for (char c : device_name) safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return dir / "vkgmm" / ("tiling-" + safe + ".txt");
}

std::string cache_key(const Workload& w) {
  return std::string("op=") + op_name(w.op) + " m=" + std::to_string(w.m) + " k=" + std::to_string(w.k) +
         " n=" + std::to_string(w.n) + " groups=" + std::to_string(w.groups) + " dtype=" + vkgmm::dtype_name(w.dtype) +
         " dist=" + dist_name(w.dist);
}

namespace {

// key -> tiling text, from the file's "<key> tiling=<t>" lines; other lines are ignored.
std::map<std::string, std::string> read_cache(const std::filesystem::path& file) {
  std::map<std::string, std::string> entries;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.rfind(" tiling=");
    if (line.empty() || line[0] == '#' || at == std::string::npos) continue;
    entries[line.substr(0, at)] = line.substr(at + 8);
  }
  return entries;
}

}  // namespace

std::optional<vkgmm::Tiling> cached_tiling(const std::filesystem::path& file, const Workload& w) {
  if (file.empty()) return std::nullopt;
  const auto entries = read_cache(file);
  const auto it = entries.find(cache_key(w));
  return it == entries.end() ? std::nullopt : parse_tiling(it->second);
}

void store_tiling(const std::filesystem::path& file, const Workload& w, const vkgmm::Tiling& t) {
  if (file.empty()) throw std::runtime_error("no cache directory: neither XDG_CACHE_HOME nor HOME is set");
  auto entries = read_cache(file);
  entries[cache_key(w)] = tiling_text(t);
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  // Write a sibling file and rename it over the old one, so a reader never sees half a file.
  const std::filesystem::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "# vkgmm bench --sweep-tiling: the fastest tiling measured per workload shape on this device\n";
    for (const auto& [key, tiling] : entries) out << key << " tiling=" << tiling << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw std::runtime_error("cannot write " + file.string() + ": " + ec.message());
}

}  // namespace bench
