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
// A thread still doing device work without the GIL when Py_Finalize ends would run on while exit() tears
// down the libraries it is in (the Vulkan loader, its layers, the driver): the end of Py_Finalize waits
// until none does (wait_for_released_threads, registered with Py_AtExit by the module), each having
// parked or come to wait for the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace vkgmm_py {

namespace gil_detail {

// The threads doing device work without the GIL, inside a ReleaseGil scope: the ones exit waits for. A
// thread asking for the GIL back is not among them: from Python 3.14 on, finalization leaves such a
// thread waiting for good rather than ending it, and exit must not wait for it.
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

inline thread_local int depth = 0;           // this thread's nested ReleaseGil scopes
inline thread_local bool counted = false;    // this thread is among Released::threads

inline void set_counted(bool on) {
  if (on == counted) return;
  counted = on;
  Released& r = released();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.threads += on ? 1 : -1;
  if (r.threads == 0) r.none.notify_all();
}

}  // namespace gil_detail

// This thread sleeps for good: the interpreter is finalizing and would end it.
[[noreturn]] inline void park_thread() {
  gil_detail::set_counted(false);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
}

// For Py_AtExit: waits until no thread does device work without the GIL (each has parked, or waits for
// the GIL, which it will not get), for at most 10 s: a device wait that hangs is bounded by the Context's
// timeout_s, which exit does not wait out.
inline void wait_for_released_threads() {
  gil_detail::Released& r = gil_detail::released();
  std::unique_lock<std::mutex> lock(r.mutex);
  r.none.wait_for(lock, std::chrono::seconds(10), [&r] { return r.threads == 0; });
}

// Gives up the GIL for its scope (device work, compiling); takes it back at the end.
class ReleaseGil {
 public:
  ReleaseGil() {
    ++gil_detail::depth;
    state_ = PyEval_SaveThread();
    gil_detail::set_counted(true);
  }
  ~ReleaseGil() {
    gil_detail::set_counted(false);
    try {
      PyEval_RestoreThread(state_);
    } catch (...) {
      park_thread();
    }
    --gil_detail::depth;
  }
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  PyThreadState* state_ = nullptr;
};

// Holds the GIL for its scope, on any thread (a Python callback from inside the library, maybe inside a
// ReleaseGil scope, whose device work resumes after it).
class AcquireGil {
 public:
  AcquireGil() : state_(ensure()) {}
  ~AcquireGil() {
    PyGILState_Release(state_);
    gil_detail::set_counted(gil_detail::depth > 0);
  }
  AcquireGil(const AcquireGil&) = delete;
  AcquireGil& operator=(const AcquireGil&) = delete;

 private:
  static PyGILState_STATE ensure() {
    gil_detail::set_counted(false);
    try {
      return PyGILState_Ensure();
    } catch (...) {
      park_thread();
    }
  }
  PyGILState_STATE state_;
};

// f(), the GIL held, where f is a call into Python's C API that may run Python code (an __index__, an
// iterator, a __repr__, a __del__). Python code hands the GIL over and asks for it back, so the thread
// may be ended inside the call: it is parked there, before any reference is dropped without the GIL.
// f must hold no references of its own: the unwind is caught here, with no C++ frame between.
template <typename F>
auto guarded(F f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    park_thread();
  }
}

// fn(*args), the GIL held, guarded.
inline pybind11::object call_python(const pybind11::object& fn, const pybind11::tuple& args) {
  PyObject* r = guarded([&] { return PyObject_Call(fn.ptr(), args.ptr(), nullptr); });
  if (!r) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::object>(r);
}

// Drops a reference, the GIL held, guarded (a deallocation may run Python code).
inline void drop_reference(PyObject* o) {
  guarded([o] { Py_XDECREF(o); });
}

// A reference owned by a C++ frame that runs guarded calls: dropped guarded. (pybind11's objects drop
// theirs unguarded, from destructors, which an ended thread's unwind would run without the GIL.)
class Reference {
 public:
  explicit Reference(PyObject* o) : o_(o) {}
  ~Reference() { drop_reference(o_); }
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;
  PyObject* get() const { return o_; }

 private:
  PyObject* o_;
};

}  // namespace vkgmm_py
