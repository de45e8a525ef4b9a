// See scratch.hpp.
#include "scratch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace vkgmm::fuzz {

namespace {

class ScratchDir {
 public:
  explicit ScratchDir(const char* tag) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/vkgmm_fuzz_" + tag + "_XXXXXX";
    if (!mkdtemp(path_.data())) throw std::runtime_error("cannot create a scratch directory");
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

const std::string& scratch_dir(const char* tag) {
  static std::map<std::string, ScratchDir> dirs;
  auto it = dirs.find(tag);
  if (it == dirs.end()) it = dirs.try_emplace(tag, tag).first;
  return it->second.path();
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

std::string after_name(const std::string& message, const std::string& name) {
  const std::string prefix = name + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : std::string();
}

}  // namespace vkgmm::fuzz
