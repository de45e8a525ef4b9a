// A strict reader of GGUF v3 files (ggml's docs/gguf.md), for the tools: `vkgmm run --rhs FILE.gguf:TENSOR`,
// the tests and the fuzzer. Not part of the library.
//
// The whole header is read and checked: magic, version 3, the key-values (every value type, arrays of any
// type, nested ones too), general.alignment, the tensor infos and the data section's start. Every tensor
// of a known ggml type gets its size from the type's block size and bytes, and must lie, aligned, inside
// the file without overlapping another. Anything malformed is refused with a one-line
// std::runtime_error("<name>: <problem>"), before any allocation sized by an unchecked count. Little-endian
// files only (the spec has no marker for big-endian ones; a byte-swapped version is called out).
//
// Tensors of a ggml type vkgmm cannot run (IQ2_XXS, Q8_K, ...) are parsed, sized and bounds-checked like
// the others (a real model file mixes types), with `dtype` empty; load_expert_tensor refuses them. Type ids
// ggml does not define (or has removed) are refused when the file is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkgmm/types.hpp"

namespace gguf {

// gguf_metadata_value_type.
enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
  u64 = 10, i64 = 11, f64 = 12,
};
const char* value_type_name(ValueType t);
// Bytes of one value of a fixed-size type; 0 for string and array.
size_t value_type_size(ValueType t);

// One metadata value. Scalars and arrays of fixed-size elements keep their little-endian bytes (`raw`):
// a million-entry u8 array costs a megabyte, not a million objects. Arrays of strings or of arrays hold
// their elements as Values (`items`).
struct Value {
  ValueType type = ValueType::u8;
  std::vector<uint8_t> raw;  // a scalar's bytes; an array of fixed-size elements: all their bytes
  std::string str;           // type string
  ValueType elem_type = ValueType::u8;  // type array: the elements' type
  uint64_t count = 0;                   // type array: the number of elements
  std::vector<Value> items;             // type array of strings or arrays: the elements

  // Scalar accessors; each throws std::logic_error on a value of another kind.
  uint64_t as_uint() const;  // u8, u16, u32, u64
  int64_t as_int() const;    // i8, i16, i32, i64
  double as_float() const;   // f32 (widened exactly), f64
  bool as_bool() const;
  const std::string& as_string() const;
  // Element i of an array, as a Value of elem_type (a copy).
  Value element(uint64_t i) const;
};

struct KeyValue {
  std::string key;
  Value value;
};

// ggml's tensor type ids (ggml.h, enum ggml_type) that vkgmm runs (kF32, kQ4_K, ...), from VKGMM_DTYPES
// (vkgmm/vocabulary.h).
#define VKGMM_GGML_TYPE_(name, NAME, value, values, bytes, ggml) k##NAME = ggml,
enum GgmlType : uint32_t { VKGMM_DTYPES(VKGMM_GGML_TYPE_) };
#undef VKGMM_GGML_TYPE_
// ggml's name of a type id ("Q4_K"); nullptr for an id ggml does not define.
const char* ggml_type_name(uint32_t type);
// Values per block and bytes per block of a defined type id (1 and the element size for plain types);
// 0 for an id ggml does not define.
uint64_t ggml_block_elements(uint32_t type);
uint64_t ggml_block_bytes(uint32_t type);
// The vkgmm type of a ggml type id, when vkgmm runs it.
std::optional<vkgmm::DType> dtype_of_ggml(uint32_t type);
// The ggml type id of a vkgmm type (every DType has one).
uint32_t ggml_of_dtype(vkgmm::DType t);

struct Tensor {
  std::string name;
  std::vector<uint64_t> ne;   // GGUF order: ne[0] is the row length (contiguous); 1 to 4 dims
  uint32_t ggml_type = 0;
  std::optional<vkgmm::DType> dtype;  // empty when vkgmm does not run this type
  uint64_t offset = 0;        // from the start of the data section, as stored (a multiple of the alignment)
  uint64_t file_offset = 0;   // from the start of the file
  uint64_t size = 0;          // bytes: (elements / block_elements) * block_bytes

  uint64_t elements() const;  // product of ne
};

class File {
 public:
  uint32_t version = 3;
  uint64_t alignment = 32;    // general.alignment, or 32
  uint64_t data_offset = 0;   // the data section's start in the file (aligned)
  uint64_t file_size = 0;
  std::string name;           // the path, or the name given to parse(): used in messages
  std::vector<KeyValue> kvs;  // in file order (keys are unique)
  std::vector<Tensor> tensors;  // in file order (names are unique)

  const KeyValue* find_kv(const std::string& key) const;
  const Tensor* find_tensor(const std::string& name) const;
  // The tensor's bytes, exactly `t.size` of them. Throws std::runtime_error naming the file if they cannot
  // be read (the file changed since it was parsed).
  std::vector<uint8_t> read_bytes(const Tensor& t) const;

 private:
  friend File parse(const uint8_t* data, size_t size, const std::string& name);
  friend File read(const std::string& path);
  std::shared_ptr<const std::vector<uint8_t>> memory_;  // parse(): a copy of the bytes; read(): empty
};

// Reads and checks the header of a GGUF file (the tensor data is read only by File::read_bytes).
// Throws std::runtime_error("<path>: <problem>").
File read(const std::string& path);

// The same from bytes in memory (copied into the File); `name` is used in messages only.
File parse(const uint8_t* data, size_t size, const std::string& name);

// An expert tensor as vkgmm's gmm takes its rhs (docs/contract.md, "Quantized expert weights"): GGUF dims
// [k, n, E] (memory [E, n, k], the transposed layout), or [k, n] with E = 1; its bytes as stored.
struct ExpertTensor {
  vkgmm::DType dtype = vkgmm::DType::f32;
  int64_t E = 0, n = 0, k = 0;
  std::vector<uint8_t> bytes;
};

// Throws std::runtime_error("<file>: tensor '<name>': <problem>") for a missing tensor, a rank other
// than 2 or 3, or a type vkgmm does not run (naming it and its id).
ExpertTensor load_expert_tensor(const File& file, const std::string& tensor_name);

}  // namespace gguf
