#include "run_output.hpp"

#include <filesystem>

#include "npy.hpp"
#include "run_operands.hpp"
#include "usage_error.hpp"

void check_out_path(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw UsageError("--out: '" + out + "' is a directory");
  const fs::path parent = fs::path(out).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw UsageError("--out: directory '" + parent.string() + "' does not exist");
}

std::vector<uint8_t> download_output(const vkgmm::Buffer& buf, vkgmm::DType t, uint64_t elements) {
  std::vector<uint8_t> out(static_cast<size_t>(elements) * vkgmm::dtype_size(t));
  if (!out.empty()) buf.download(out.data(), out.size());
  return out;
}

void write_output(const std::string& path, vkgmm::DType t, const std::vector<uint8_t>& bytes,
                  std::vector<int64_t> shape) {
  npy::write(path, output_array(t, bytes, std::move(shape)));
}
