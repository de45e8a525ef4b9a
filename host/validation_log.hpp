// Messages of the validation layer, gathered per Context from its debug messenger (internal; a part of
// Context::Impl). Any thread may add; plans and submissions turn them into Errors.
//
// The layer reports from inside the Vulkan call that broke a rule, on the thread that made it, so each
// message is kept with its thread: a call checks only the messages its own thread caused, and one
// thread's mistake is never thrown by another thread's plan or submission.
#pragma once

#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace vkgmm {

class ValidationLog {
 public:
  void add(std::string message) {
    std::lock_guard lock(mutex_);
    messages_.push_back({std::this_thread::get_id(), std::move(message)});
  }
  // Every thread's messages (the tests' check, and teardown's report).
  std::vector<std::string> take();
  // Throws Error(validation) with the calling thread's first message (and how many more it caused) when
  // there are any; other threads' messages stay for their own calls.
  void throw_if_any();

 private:
  struct Message {
    std::thread::id thread;
    std::string text;
  };
  std::mutex mutex_;
  std::vector<Message> messages_;
};

}  // namespace vkgmm
