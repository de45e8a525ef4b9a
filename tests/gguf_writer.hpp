// A GGUF v3 writer for the tests (tests/test_gguf.cpp) and for making the fuzzer's seed corpus: it writes
// what it is given without checking it (duplicate names, odd dims, any type id), so that the tests can
// build malformed files too, and it reports where each field landed so that a test can corrupt one.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gguf.hpp"

namespace gguf_test {

using gguf::Value;
using gguf::ValueType;

template <typename T>
Value scalar(ValueType type, T v) {
  Value r;
  r.type = type;
  r.raw.resize(sizeof(T));
  std::memcpy(r.raw.data(), &v, sizeof(T));  // the host is little-endian, as GGUF is
  return r;
}
inline Value u8(uint8_t v) { return scalar(ValueType::u8, v); }
inline Value i8(int8_t v) { return scalar(ValueType::i8, v); }
inline Value u16(uint16_t v) { return scalar(ValueType::u16, v); }
inline Value i16(int16_t v) { return scalar(ValueType::i16, v); }
inline Value u32(uint32_t v) { return scalar(ValueType::u32, v); }
inline Value i32(int32_t v) { return scalar(ValueType::i32, v); }
inline Value f32(float v) { return scalar(ValueType::f32, v); }
inline Value boolean(bool v) { return scalar(ValueType::boolean, uint8_t(v ? 1 : 0)); }
inline Value u64(uint64_t v) { return scalar(ValueType::u64, v); }
inline Value i64(int64_t v) { return scalar(ValueType::i64, v); }
inline Value f64(double v) { return scalar(ValueType::f64, v); }
inline Value str(std::string s) {
  Value r;
  r.type = ValueType::string;
  r.str = std::move(s);
  return r;
}
// An array of elements of type `elem` (each of `elems` must be of that type).
inline Value array(ValueType elem, const std::vector<Value>& elems) {
  Value r;
  r.type = ValueType::array;
  r.elem_type = elem;
  r.count = elems.size();
  for (const Value& e : elems) {
    if (elem == ValueType::string || elem == ValueType::array)
      r.items.push_back(e);
    else
      r.raw.insert(r.raw.end(), e.raw.begin(), e.raw.end());
  }
  return r;
}

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;  // written as given: n_dims = ne.size()
  uint32_t ggml_type = 0;
  std::vector<uint8_t> data;  // written as given (the reader derives the size from ne and the type)
};

// Where the writer put each field, for tests that corrupt one.
struct Layout {
  size_t version = 4, tensor_count = 8, kv_count = 16;
  struct Info {
    size_t name = 0, n_dims = 0, ne = 0, type = 0, offset = 0;
  };
  std::vector<size_t> kv_key;  // each key-value's key length field
  std::vector<size_t> kv_type; // each key-value's value type field
  std::vector<Info> infos;
  size_t header_end = 0;   // the end of the tensor infos
  size_t data_start = 0;   // the data section
  std::vector<uint64_t> offsets;  // each tensor's offset in the data section
};

class Writer {
 public:
  explicit Writer(uint64_t alignment = 32) : alignment_(alignment) {}

  void kv(std::string key, Value v) { kvs_.push_back({std::move(key), std::move(v)}); }
  void tensor(TensorSpec t) { tensors_.push_back(std::move(t)); }
  // The data section in the reverse order of the tensor infos (offsets then decrease).
  void reverse_data(bool on) { reverse_ = on; }

  std::vector<uint8_t> bytes(Layout* layout = nullptr) const {
    Layout l;
    std::vector<uint8_t> b;
    put(b, "GGUF", 4);
    put_int<uint32_t>(b, 3);
    put_int<uint64_t>(b, tensors_.size());
    put_int<uint64_t>(b, kvs_.size());
    for (const auto& [key, v] : kvs_) {
      l.kv_key.push_back(b.size());
      put_string(b, key);
      l.kv_type.push_back(b.size());
      put_int<uint32_t>(b, static_cast<uint32_t>(v.type));
      put_value(b, v);
    }
    // Offsets: each tensor's data padded to the alignment, in info order or reversed.
    std::vector<uint64_t> offsets(tensors_.size());
    uint64_t at = 0;
    for (size_t j = 0; j < tensors_.size(); ++j) {
      const size_t i = reverse_ ? tensors_.size() - 1 - j : j;
      offsets[i] = at;
      at = pad(at + tensors_[i].data.size());
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const TensorSpec& t = tensors_[i];
      Layout::Info info;
      info.name = b.size();
      put_string(b, t.name);
      info.n_dims = b.size();
      put_int<uint32_t>(b, static_cast<uint32_t>(t.ne.size()));
      info.ne = b.size();
      for (uint64_t d : t.ne) put_int<uint64_t>(b, d);
      info.type = b.size();
      put_int<uint32_t>(b, t.ggml_type);
      info.offset = b.size();
      put_int<uint64_t>(b, offsets[i]);
      l.infos.push_back(info);
    }
    l.header_end = b.size();
    if (!tensors_.empty()) b.resize(pad(b.size()), 0);  // no data section: no padding (the reader allows it)
    l.data_start = b.size();
    b.resize(b.size() + at, 0);
    for (size_t i = 0; i < tensors_.size(); ++i)
      if (!tensors_[i].data.empty())
        std::memcpy(b.data() + l.data_start + offsets[i], tensors_[i].data.data(), tensors_[i].data.size());
    l.offsets = offsets;
    if (layout) *layout = l;
    return b;
  }

 private:
  uint64_t pad(uint64_t x) const { return (x + alignment_ - 1) / alignment_ * alignment_; }
  static void put(std::vector<uint8_t>& b, const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
  }
  template <typename T>
  static void put_int(std::vector<uint8_t>& b, T v) {
    put(b, &v, sizeof v);
  }
  static void put_string(std::vector<uint8_t>& b, const std::string& s) {
    put_int<uint64_t>(b, s.size());
    put(b, s.data(), s.size());
  }
  static void put_value(std::vector<uint8_t>& b, const Value& v) {
    if (v.type == ValueType::string) return put_string(b, v.str);
    if (v.type != ValueType::array) return put(b, v.raw.data(), v.raw.size());
    put_int<uint32_t>(b, static_cast<uint32_t>(v.elem_type));
    put_int<uint64_t>(b, v.count);
    if (v.elem_type == ValueType::string || v.elem_type == ValueType::array)
      for (const Value& e : v.items) put_value(b, e);
    else
      put(b, v.raw.data(), v.raw.size());
  }

  uint64_t alignment_;
  bool reverse_ = false;
  std::vector<std::pair<std::string, Value>> kvs_;
  std::vector<TensorSpec> tensors_;
};

// Overwrites the little-endian integer at `pos`.
template <typename T>
void patch(std::vector<uint8_t>& b, size_t pos, T v) {
  std::memcpy(b.data() + pos, &v, sizeof v);
}

}  // namespace gguf_test
