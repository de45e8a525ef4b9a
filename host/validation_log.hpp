// Messages of the validation layer, gathered per Context from its debug messenger (internal; a part of
// Context::Impl). Any thread may add; plans and submissions turn them into Errors.
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace vkgmm {

class ValidationLog {
 public:
  void add(std::string message) {
    std::lock_guard lock(mutex_);
    messages_.push_back(std::move(message));
  }
  std::vector<std::string> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(messages_, {});
  }
  // Throws Error(validation) with the first message (and how many more) when there are any.
  void throw_if_any();

 private:
  std::mutex mutex_;
  std::vector<std::string> messages_;
};

}  // namespace vkgmm
