// Fuzz target body for the .npy reader (see targets.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "npy.hpp"
#include "targets.hpp"

namespace vkgmm::fuzz {

namespace {

// A scratch directory of this process, made once and removed at exit: npy::read needs a real file.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/vkgmm_fuzz_npy_XXXXXX";
    if (!mkdtemp(path_.data())) throw std::runtime_error("cannot create a scratch directory");
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

void put_file(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path);
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(fd, data + done, size - done);
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  ::close(fd);
  if (done != size) throw std::runtime_error("short write to " + path);
}

// The message without the "<name>: " every refusal starts with; empty if it does not start so.
std::string after_name(const std::string& message, const std::string& name) {
  const std::string prefix = name + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : std::string();
}

std::string same_array(const npy::Array& a, const npy::Array& b, const char* what) {
  if (a.descr != b.descr) return std::string(what) + ": descr " + a.descr + " != " + b.descr;
  if (a.shape != b.shape) return std::string(what) + ": shapes differ";
  if (a.data != b.data) return std::string(what) + ": data differs";
  return "";
}

}  // namespace

std::string npy_one(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  const std::string name = "input";
  std::optional<npy::Array> parsed;
  std::string refusal;
  try {
    parsed = npy::parse(bytes, name);
  } catch (const std::runtime_error& e) {
    refusal = e.what();
    if (after_name(refusal, name).empty()) return "refusal does not start with the input's name: " + refusal;
    if (refusal.find('\n') != std::string::npos || refusal.find('\r') != std::string::npos)
      return "refusal spans several lines: " + refusal;
  }

  if (parsed) {
    const npy::Array& a = *parsed;
    if (a.descr != "<f4" && a.descr != "<f2" && a.descr != "<i4" && a.descr != "<i8" && a.descr != "|u1")
      return "accepted an unsupported descr " + a.descr;
    uint64_t count = 1;
    for (int64_t d : a.shape) {
      if (d < 0) return "accepted a negative dimension";
      count *= static_cast<uint64_t>(d);  // the data bounds it, so it cannot overflow here
    }
    if (a.data.size() != count * npy::item_size(a.descr)) return "data size does not match descr and shape";
    if (a.data.size() > size) return "more data than input bytes";
  }

  // The streaming reader must agree with the in-memory one on the same bytes.
  const std::string path = scratch_dir() + "/in.npy";
  put_file(path, data, size);
  try {
    const npy::Array b = npy::read(path);
    if (!parsed) return "read accepted what parse refused (" + refusal + ")";
    if (std::string d = same_array(*parsed, b, "read vs parse"); !d.empty()) return d;
  } catch (const std::runtime_error& e) {
    if (parsed) return std::string("read refused what parse accepted: ") + e.what();
    if (after_name(e.what(), path) != after_name(refusal, name))
      return "read and parse refuse differently: '" + std::string(e.what()) + "' vs '" + refusal + "'";
  }

  // What was accepted survives the writer (which picks its own header layout) unchanged.
  if (parsed) {
    const std::string out = scratch_dir() + "/out.npy";
    npy::write(out, *parsed);
    if (std::string d = same_array(*parsed, npy::read(out), "write + read"); !d.empty()) return d;
  }
  return "";
}

}  // namespace vkgmm::fuzz
