#include "run_output.hpp"

#include <filesystem>
#include <stdexcept>

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
