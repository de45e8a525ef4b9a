// What the file-reading fuzz targets share (internal to fuzz/): a scratch directory for the readers that
// need a real file, writing the input there, and the refusal messages' "<name>: " prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vkgmm::fuzz {

// A directory of this process, made on first use (under $TMPDIR, else /tmp; `tag` in its name) and
// removed at exit. One per tag.
const std::string& scratch_dir(const char* tag);
// `size` bytes of data into the file at path (created or truncated); throws std::runtime_error on failure.
void put_file(const std::string& path, const uint8_t* data, size_t size);
// The message without the "<name>: " every refusal starts with; empty if it does not start so.
std::string after_name(const std::string& message, const std::string& name);

}  // namespace vkgmm::fuzz
