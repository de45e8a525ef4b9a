// Fuzz target body for the GGUF reader (see targets.hpp).
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf.hpp"
#include "gguf_writer.hpp"
#include "scratch.hpp"
#include "targets.hpp"

namespace vkgmm::fuzz {

namespace {

bool same_value(const gguf::Value& a, const gguf::Value& b) {
  if (a.type != b.type || a.raw != b.raw || a.str != b.str) return false;
  if (a.type != gguf::ValueType::array) return true;
  if (a.elem_type != b.elem_type || a.count != b.count || a.items.size() != b.items.size()) return false;
  for (size_t i = 0; i < a.items.size(); ++i)
    if (!same_value(a.items[i], b.items[i])) return false;
  return true;
}

// The same key-values and tensors (names, dims, types, sizes, bytes); offsets may differ.
std::string same_content(const gguf::File& a, const gguf::File& b, const char* what) {
  const std::string w = std::string(what) + ": ";
  if (a.alignment != b.alignment) return w + "alignments differ";
  if (a.kvs.size() != b.kvs.size()) return w + "key-value counts differ";
  for (size_t i = 0; i < a.kvs.size(); ++i)
    if (a.kvs[i].key != b.kvs[i].key || !same_value(a.kvs[i].value, b.kvs[i].value))
      return w + "key-value " + std::to_string(i) + " differs";
  if (a.tensors.size() != b.tensors.size()) return w + "tensor counts differ";
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const gguf::Tensor &s = a.tensors[i], &t = b.tensors[i];
    if (s.name != t.name || s.ne != t.ne || s.ggml_type != t.ggml_type || s.size != t.size || s.dtype != t.dtype)
      return w + "tensor " + std::to_string(i) + " differs";
    if (a.read_bytes(s) != b.read_bytes(t)) return w + "tensor " + std::to_string(i) + "'s bytes differ";
  }
  return "";
}

// Every invariant an accepted file must meet, checked independently of the reader's own checks.
std::string check_accepted(const gguf::File& f, size_t size, const uint8_t* data) {
  if (f.version != 3) return "accepted version " + std::to_string(f.version);
  if (f.alignment == 0 || (f.alignment & (f.alignment - 1)) != 0) return "accepted a non-power-of-two alignment";
  if (f.file_size != size) return "file_size differs from the input's";
  if (!f.tensors.empty() && (f.data_offset % f.alignment != 0 || f.data_offset > size))
    return "data section misplaced";
  for (size_t i = 0; i < f.kvs.size(); ++i) {
    if (f.kvs[i].key.empty()) return "accepted an empty key";
    for (size_t j = 0; j < i; ++j)
      if (f.kvs[i].key == f.kvs[j].key) return "accepted a duplicate key";
  }
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    const gguf::Tensor& t = f.tensors[i];
    const uint64_t be = gguf::ggml_block_elements(t.ggml_type), bb = gguf::ggml_block_bytes(t.ggml_type);
    if (be == 0) return "accepted an unknown type id " + std::to_string(t.ggml_type);
    if (t.ne.empty() || t.ne.size() > 4) return "accepted a tensor of rank " + std::to_string(t.ne.size());
    if (t.ne[0] % be != 0) return "accepted a row that is not whole blocks";
    long double count = 1;  // overflow-free here: the reader bounds the product by int64
    for (uint64_t d : t.ne) count *= static_cast<long double>(d);
    if (count > 9.3e18L) return "accepted an element count past int64";
    if (t.size != t.elements() / be * bb) return "size does not match dims and type";
    if (t.offset % f.alignment != 0) return "accepted a misaligned offset";
    if (t.file_offset != f.data_offset + t.offset) return "file_offset != data_offset + offset";
    if (t.file_offset > size || t.size > size - t.file_offset) return "accepted a tensor past the end";
    if (t.dtype != gguf::dtype_of_ggml(t.ggml_type)) return "dtype does not match the type id";
    if (!std::equal(data + t.file_offset, data + t.file_offset + t.size, f.read_bytes(t).begin()))
      return "read_bytes differs from the input's bytes";
    for (size_t j = 0; j < i; ++j) {
      const gguf::Tensor& u = f.tensors[j];
      if (u.name == t.name) return "accepted a duplicate tensor name";
      if (t.size && u.size && t.offset < u.offset + u.size && u.offset < t.offset + t.size)
        return "accepted overlapping tensors";
    }
    // load_expert_tensor: exactly the runnable tensors of rank 2 or 3.
    const bool loadable = t.dtype && (t.ne.size() == 2 || t.ne.size() == 3);
    try {
      const gguf::ExpertTensor e = gguf::load_expert_tensor(f, t.name);
      if (!loadable) return "load_expert_tensor took tensor " + std::to_string(i);
      if (e.k != int64_t(t.ne[0]) || e.n != int64_t(t.ne[1]) || e.E != (t.ne.size() == 3 ? int64_t(t.ne[2]) : 1) ||
          e.bytes.size() != t.size || e.dtype != *t.dtype)
        return "load_expert_tensor's result differs from the tensor info";
    } catch (const std::runtime_error& e) {
      if (loadable) return std::string("load_expert_tensor refused a loadable tensor: ") + e.what();
    }
  }
  return "";
}

}  // namespace

std::string gguf_one(const uint8_t* data, size_t size) {
  const std::string name = "input";
  std::optional<gguf::File> parsed;
  std::string refusal;
  try {
    parsed = gguf::parse(data, size, name);
  } catch (const std::runtime_error& e) {
    refusal = e.what();
    if (after_name(refusal, name).empty()) return "refusal does not start with the input's name: " + refusal;
    if (refusal.find('\n') != std::string::npos || refusal.find('\r') != std::string::npos)
      return "refusal spans several lines: " + refusal;
  }
  if (parsed)
    if (std::string v = check_accepted(*parsed, size, data); !v.empty()) return v;

  // The file reader must agree with the in-memory one on the same bytes.
  const std::string path = scratch_dir("gguf") + "/in.gguf";
  put_file(path, data, size);
  try {
    const gguf::File g = gguf::read(path);
    if (!parsed) return "read accepted what parse refused (" + refusal + ")";
    if (g.data_offset != parsed->data_offset) return "read and parse place the data section differently";
    if (std::string d = same_content(*parsed, g, "read vs parse"); !d.empty()) return d;
  } catch (const std::runtime_error& e) {
    if (parsed) return std::string("read refused what parse accepted: ") + e.what();
    if (after_name(e.what(), path) != after_name(refusal, name))
      return "read and parse refuse differently: '" + std::string(e.what()) + "' vs '" + refusal + "'";
  }

  // What was accepted, written again by the tests' writer (its own layout), reads back the same.
  if (parsed) {
    gguf_test::Writer w(parsed->alignment);
    for (const gguf::KeyValue& kv : parsed->kvs) w.kv(kv.key, kv.value);
    for (const gguf::Tensor& t : parsed->tensors) w.tensor({t.name, t.ne, t.ggml_type, parsed->read_bytes(t)});
    const std::vector<uint8_t> again = w.bytes();
    try {
      if (std::string d = same_content(*parsed, gguf::parse(again.data(), again.size(), "again"), "rewrite");
          !d.empty())
        return d;
    } catch (const std::runtime_error& e) {
      return std::string("the rewritten file is refused: ") + e.what();
    }
  }
  return "";
}

}  // namespace vkgmm::fuzz
