// Messages that arrive while a Context is destroyed, where nothing can be thrown: echoed to stderr and
// kept for the tests (context_impl.hpp).
#include <cstdio>
#include <mutex>
#include <utility>

#include "context_impl.hpp"

namespace vkgmm {

namespace {
std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& sink() {
  // Never destroyed: Contexts held in statics are destroyed at exit, possibly after this file's statics.
  static auto* v = new std::vector<std::string>;
  return *v;
}
}  // namespace

void report_teardown_messages(std::vector<std::string> messages) {
  if (messages.empty()) return;
  std::lock_guard lock(sink_mutex());
  for (auto& m : messages) {
    std::fprintf(stderr, "vkgmm: at Context teardown: %s\n", m.c_str());
    sink().push_back(std::move(m));
  }
}

std::vector<std::string> take_teardown_messages() {
  std::lock_guard lock(sink_mutex());
  return std::exchange(sink(), {});
}

}  // namespace vkgmm
