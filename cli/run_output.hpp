// `vkgmm run`'s output step: --out is checked before any device work (a run that cannot write its
// result should fail before it spends the time), and written last, atomically (npy::write renames a
// finished temporary file into place), so that any failure, a failed --check included, leaves no file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "npy.hpp"
#include "vkgmm/context.hpp"
#include "vkgmm/types.hpp"

// UsageError naming --out when `out` is empty or a directory, when its directory does not exist (or a
// file stands where a directory should), or when npy::check_writable says it cannot be written.
void check_out_path(const std::string& out);

// The first `elements` elements of type t in `buf`, as bytes (exactly those: no padding).
std::vector<uint8_t> download_output(const vkgmm::Buffer& buf, vkgmm::DType t, uint64_t elements);

// npy::write to --out's `path`, its errors naming --out (vkgmm run's and vkgmm quantize's output).
void write_npy_out(const std::string& path, const npy::Array& array);

// Writes `bytes` (elements of type t) to `path` as an .npy of `shape`.
void write_output(const std::string& path, vkgmm::DType t, const std::vector<uint8_t>& bytes,
                  std::vector<int64_t> shape);
