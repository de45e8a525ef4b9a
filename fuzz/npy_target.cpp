// Fuzz target body for the .npy reader (see targets.hpp).
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "npy.hpp"
#include "scratch.hpp"
#include "targets.hpp"

namespace vkgmm::fuzz {

namespace {


std::string same_array(const npy::Array& a, const npy::Array& b, const char* what) {
  if (a.descr != b.descr) return std::string(what) + ": descr " + a.descr + " != " + b.descr;
  if (a.shape != b.shape) return std::string(what) + ": shapes differ";
  if (a.data != b.data) return std::string(what) + ": data differs";
  return "";
}

}  // namespace

std::string npy_one(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  const std::string name = "input";
  std::optional<npy::Array> parsed;
  std::string refusal;
  try {
    parsed = npy::parse(bytes, name);
  } catch (const std::runtime_error& e) {
    refusal = e.what();
    if (after_name(refusal, name).empty()) return "refusal does not start with the input's name: " + refusal;
    if (refusal.find('\n') != std::string::npos || refusal.find('\r') != std::string::npos)
      return "refusal spans several lines: " + refusal;
  }

  if (parsed) {
    const npy::Array& a = *parsed;
    if (a.descr != "<f4" && a.descr != "<f2" && a.descr != "<i4" && a.descr != "<i8" && a.descr != "|u1")
      return "accepted an unsupported descr " + a.descr;
    uint64_t count = 1;
    for (int64_t d : a.shape) {
      if (d < 0) return "accepted a negative dimension";
      count *= static_cast<uint64_t>(d);  // the data bounds it, so it cannot overflow here
    }
    if (a.data.size() != count * npy::item_size(a.descr)) return "data size does not match descr and shape";
    if (a.data.size() > size) return "more data than input bytes";
  }

  // The streaming reader must agree with the in-memory one on the same bytes.
  const std::string path = scratch_dir("npy") + "/in.npy";
  put_file(path, data, size);
  try {
    const npy::Array b = npy::read(path);
    if (!parsed) return "read accepted what parse refused (" + refusal + ")";
    if (std::string d = same_array(*parsed, b, "read vs parse"); !d.empty()) return d;
  } catch (const std::runtime_error& e) {
    if (parsed) return std::string("read refused what parse accepted: ") + e.what();
    if (after_name(e.what(), path) != after_name(refusal, name))
      return "read and parse refuse differently: '" + std::string(e.what()) + "' vs '" + refusal + "'";
  }

  // What was accepted survives the writer (which picks its own header layout) unchanged.
  if (parsed) {
    const std::string out = scratch_dir("npy") + "/out.npy";
    npy::write(out, *parsed);
    if (std::string d = same_array(*parsed, npy::read(out), "write + read"); !d.empty()) return d;
  }
  return "";
}

}  // namespace vkgmm::fuzz
