// A strict reader and writer of NumPy .npy files, for the command line's inputs and outputs.
//
// Only what vkgmm needs: little-endian, C-order arrays of <f4, <f2, <i4, <i8 or |u1 (bytes: quantized
// blocks, vkgmm quantize and --rhs-format). Anything else is refused
// with a std::runtime_error naming the file and the rule, rather than guessed at.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace npy {

struct Array {
  std::string descr;           // "<f4", "<f2", "<i4", "<i8" or "|u1"
  std::vector<int64_t> shape;  // empty for a 0-d array
  std::vector<uint8_t> data;   // element_count() * item_size(descr) bytes, little-endian, C order

  int64_t element_count() const;  // product of shape (1 for a 0-d array)
};

// Bytes per element of a supported descr; throws std::invalid_argument for any other.
size_t item_size(const std::string& descr);

// Reads a format 1.0, 2.0 or 3.0 file. Throws std::runtime_error("<path>: <problem>") on anything
// malformed or unsupported, including trailing bytes after the data.
Array read(const std::string& path);

// Parses the same from bytes already in memory; `name` is used in messages only.
Array parse(const std::vector<uint8_t>& bytes, const std::string& name);

// Writes a format 1.0 file (2.0 only if the header could not fit 1.0's 16-bit length). The header is
// padded with spaces to a multiple of 64 bytes and ends in '\n'. A regular file (new, or existing, or
// reached through symbolic links, which are followed and kept) is written to a temporary name in its
// directory and renamed into place, so a failure never leaves a partial file. An existing file that is
// not regular (a device such as /dev/null, a FIFO) is written in place: replacing it would remove the node.
// Throws std::runtime_error naming the path on failure, std::invalid_argument on an inconsistent array.
void write(const std::string& path, const Array& array);

// Whether write(path, ...) can succeed as far as the file system goes, tried before the array exists:
// an existing target must be writable, and for a regular one a file must be creatable in its directory
// (the check creates and removes a temporary there). Throws std::runtime_error naming the path if not.
void check_writable(const std::string& path);

}  // namespace npy
