// The exception of `vkgmm run` / `vkgmm quantize` for a bad command line or a bad input file: exit status
// 2. Anything else that goes wrong (the device, the library, a failed --check) is status 1.
#pragma once

#include <functional>
#include <new>
#include <stdexcept>

#include "fail.hpp"
#include "vkgmm/types.hpp"

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs a subcommand's body and turns what it throws into its one stderr line and exit status: 2 for a
// usage error or input that broke a rule of the library (invalid_argument), 1 for everything else.
inline int exit_status_of(const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    return tool::fail(2, e.what());
  } catch (const vkgmm::Error& e) {
    return tool::fail(e.status() == vkgmm::Status::invalid_argument ? 2 : 1, e.what());
  } catch (const std::bad_alloc&) {
    return tool::fail(1, "out of host memory");
  } catch (const std::exception& e) {
    return tool::fail(1, e.what());
  }
}
