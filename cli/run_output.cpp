#include "run_output.hpp"

#include <filesystem>
#include <stdexcept>

#include "npy.hpp"
#include "run_operands.hpp"
#include "usage_error.hpp"

void check_out_path(const std::string& out) {
  namespace fs = std::filesystem;
  if (out.empty()) throw UsageError("--out needs a non-empty value");
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw UsageError("--out: '" + out + "' is a directory");
  // The nearest ancestor that exists says why the path cannot be reached: it is a file, not a directory
  // (L.npy/x), or the directory does not exist.
  fs::path parent = fs::path(out).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    for (fs::path p = parent; !p.empty(); p = p.parent_path()) {
      const fs::file_status st = fs::status(p, ec);
      if (fs::exists(st) && !fs::is_directory(st)) throw UsageError("--out: '" + p.string() + "' is not a directory");
      if (p == p.parent_path()) break;
    }
    throw UsageError("--out: directory '" + parent.string() + "' does not exist");
  }
  try {
    npy::check_writable(out);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--out: ") + e.what());
  }
}

std::vector<uint8_t> download_output(const vkgmm::Buffer& buf, vkgmm::DType t, uint64_t elements) {
  std::vector<uint8_t> out(static_cast<size_t>(elements) * vkgmm::dtype_size(t));
  if (!out.empty()) buf.download(out.data(), out.size());
  return out;
}

void write_npy_out(const std::string& path, const npy::Array& array) {
  try {
    npy::write(path, array);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--out: ") + e.what());
  }
}

void write_output(const std::string& path, vkgmm::DType t, const std::vector<uint8_t>& bytes,
                  std::vector<int64_t> shape) {
  write_npy_out(path, output_array(t, bytes, std::move(shape)));
}
