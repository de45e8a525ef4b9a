// The GIL given up around device work and taken back for Python, on threads the interpreter may end.
//
// Once Py_Finalize has begun, CPython before 3.14 ends any thread but the finalizing one that asks for the
// GIL (PyEval_RestoreThread, PyGILState_Ensure, the eval loop's hand-offs) with pthread_exit, which glibc
// runs as a forced unwind: the first noexcept frame on its way (a destructor) calls std::terminate, and
// every destructor before that would drop Python references without the GIL. A daemon thread inside a
// vkgmm call at exit would abort the process. So each place here that takes the GIL back catches that
// unwind where it starts and parks the thread: it sleeps, holding no GIL, until the process ends (what
// CPython 3.14 does itself). The calls caught are C functions: nothing else comes out of them.
//
// A thread still running without the GIL when Py_Finalize ends would run on while exit() tears down the
// libraries it is in (the Vulkan loader, its layers, the driver): the end of Py_Finalize waits for such
// threads to park (wait_for_released_threads, registered with Py_AtExit by the module).
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace vkgmm_py {

namespace gil_detail {

// The threads inside a ReleaseGil scope (nested scopes count once).
struct Released {
  std::mutex mutex;
  std::condition_variable none;
  int threads = 0;
};

// Never destroyed: threads a timed-out wait left running may still use it during exit().
inline Released& released() {
  static Released* r = new Released;
  return *r;
}

inline thread_local int depth = 0;  // this thread's nested ReleaseGil scopes

inline void count(int delta) {
  Released& r = released();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.threads += delta;
  if (r.threads == 0) r.none.notify_all();
}

}  // namespace gil_detail

// This thread sleeps for good: the interpreter is finalizing and would end it.
[[noreturn]] inline void park_thread() {
  if (gil_detail::depth > 0) {
    gil_detail::depth = 0;
    gil_detail::count(-1);
  }
  for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
}

// For Py_AtExit: waits until every thread inside a ReleaseGil scope has parked (none can take the GIL
// back by now), for at most 10 s: a device wait that hangs is bounded by the Context's timeout_s, which
// exit does not wait out.
inline void wait_for_released_threads() {
  gil_detail::Released& r = gil_detail::released();
  std::unique_lock<std::mutex> lock(r.mutex);
  r.none.wait_for(lock, std::chrono::seconds(10), [&r] { return r.threads == 0; });
}

// Gives up the GIL for its scope (device work, compiling); takes it back at the end.
class ReleaseGil {
 public:
  ReleaseGil() {
    if (gil_detail::depth++ == 0) gil_detail::count(+1);
    state_ = PyEval_SaveThread();
  }
  ~ReleaseGil() {
    try {
      PyEval_RestoreThread(state_);
    } catch (...) {
      park_thread();
    }
    if (--gil_detail::depth == 0) gil_detail::count(-1);
  }
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  PyThreadState* state_ = nullptr;
};

// Holds the GIL for its scope, on any thread (a Python callback from inside the library).
class AcquireGil {
 public:
  AcquireGil() : state_(ensure()) {}
  ~AcquireGil() { PyGILState_Release(state_); }
  AcquireGil(const AcquireGil&) = delete;
  AcquireGil& operator=(const AcquireGil&) = delete;

 private:
  static PyGILState_STATE ensure() {
    try {
      return PyGILState_Ensure();
    } catch (...) {
      park_thread();
    }
  }
  PyGILState_STATE state_;
};

// fn(*args), the GIL held. Python code hands the GIL over and asks for it back, so the thread may be ended
// inside the call: it is parked there, before any reference is dropped without the GIL.
inline pybind11::object call_python(const pybind11::object& fn, const pybind11::tuple& args) {
  PyObject* r = nullptr;
  try {
    r = PyObject_Call(fn.ptr(), args.ptr(), nullptr);
  } catch (...) {
    park_thread();
  }
  if (!r) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::object>(r);
}

// Drops a reference, the GIL held (a deallocation may run Python code, as in call_python).
inline void drop_reference(PyObject* o) {
  try {
    Py_XDECREF(o);
  } catch (...) {
    park_thread();
  }
}

}  // namespace vkgmm_py
