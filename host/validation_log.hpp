// Messages of the validation layer, gathered per Context from its debug messenger (internal; a part of
// Context::Impl). Any thread may add; plans and submissions turn them into Errors.
//
// The layer reports from inside the Vulkan call that broke a rule, on the thread that made it, so each
// message is kept with its thread: a call checks only the messages its own thread caused, and one
// thread's mistake is never thrown by another thread's plan or submission. Threads are told apart by a
// serial of the process's own (thread_serial), never reused as std::thread::id is once a thread ends. A
// message of a thread that makes no later checking call stays for take() (the tests, teardown).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace vkgmm {

// The calling thread's serial: one per thread for the process's lifetime.
inline uint64_t thread_serial() {
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t serial = next.fetch_add(1);
  return serial;
}

class ValidationLog {
 public:
  void add(std::string message) {
    std::lock_guard lock(mutex_);
    messages_.push_back({thread_serial(), std::move(message)});
  }
  // Every thread's messages (the tests' check, and teardown's report).
  std::vector<std::string> take();
  // Throws Error(validation) with the calling thread's first message (and how many more it caused) when
  // there are any; other threads' messages stay for their own calls.
  void throw_if_any();

 private:
  struct Message {
    uint64_t thread;
    std::string text;
  };
  std::mutex mutex_;
  std::vector<Message> messages_;
};

}  // namespace vkgmm
