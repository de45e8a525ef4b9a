// The fuzz targets' bodies, shared by the libFuzzer drivers (fuzz_*.cpp, built with VKGMM_FUZZ=ON and
// clang) and by the corpus replay test (tests/test_fuzz_replay.cpp, part of the default test run).
// Each takes one input and returns "" when every invariant held, else a description of the violation.
// A crash, a sanitizer report or an uncaught exception is a finding too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vkgmm::fuzz {

// The .npy reader (<f4, <f2, <i4, <i8, |u1): any bytes are either refused with a one-line std::runtime_error naming the input, or
// parsed into an array whose data matches its descr and shape; npy::parse and npy::read (the same bytes
// in a file) agree, and a parsed array survives npy::write + npy::read unchanged.
std::string npy_one(const uint8_t* data, size_t size);

// The GGUF reader: any bytes are either refused with a one-line std::runtime_error naming the input, or
// parsed into a file whose every tensor is a known type, of whole blocks, aligned, inside the data section
// and disjoint from the others, with unique names and keys; gguf::parse and gguf::read (the same bytes in
// a file) agree; the parsed key-values and tensors, written again by the tests' writer (another layout),
// read back the same; load_expert_tensor takes exactly the runnable tensors of rank 2 or 3.
std::string gguf_one(const uint8_t* data, size_t size);

// make_group_metadata on valid arguments decoded from the bytes (group sizes, m, tm, the window of
// groups, visit_empty_groups): its visit list equals an independent model of megablox's, entry for entry,
// and every padding entry is a valid group and tile index.
std::string metadata_one(const uint8_t* data, size_t size);

}  // namespace vkgmm::fuzz
