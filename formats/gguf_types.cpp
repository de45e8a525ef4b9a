// GGUF's value types and ggml's tensor types (see gguf.hpp): names, sizes, the scalar accessors of a
// metadata value, and the map between ggml's type ids and vkgmm's DType. The reader (gguf.cpp) sizes
// tensors with these tables.
#include <cstring>
#include <stdexcept>

#include "gguf.hpp"

namespace gguf {
namespace {

// --- ggml's types (ggml.h enum ggml_type; block sizes from ggml-common.h's block_* structs) -----------
struct GgmlTypeInfo {
  uint32_t id;
  const char* name;
  uint32_t block_elements;
  uint32_t block_bytes;
};

constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "F32", 1, 4},          {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},     {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},        {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36},     {41, "Q1_0", 128, 18},    {42, "Q2_0", 64, 18},
};

const GgmlTypeInfo* ggml_info(uint32_t type) {
  for (const GgmlTypeInfo& t : kGgmlTypes)
    if (t.id == type) return &t;
  return nullptr;
}

}  // namespace

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::u8: return "uint8";
    case ValueType::i8: return "int8";
    case ValueType::u16: return "uint16";
    case ValueType::i16: return "int16";
    case ValueType::u32: return "uint32";
    case ValueType::i32: return "int32";
    case ValueType::f32: return "float32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "uint64";
    case ValueType::i64: return "int64";
    case ValueType::f64: return "float64";
  }
  return "unknown";
}

size_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    case ValueType::string: case ValueType::array: return 0;
  }
  return 0;
}

namespace {
uint64_t raw_le(const std::vector<uint8_t>& raw) {
  uint64_t v = 0;
  for (size_t i = raw.size(); i-- > 0;) v = v << 8 | raw[i];
  return v;
}
}  // namespace

uint64_t Value::as_uint() const {
  if (type != ValueType::u8 && type != ValueType::u16 && type != ValueType::u32 && type != ValueType::u64)
    throw std::logic_error(std::string("gguf::Value: as_uint on a ") + value_type_name(type));
  return raw_le(raw);
}

int64_t Value::as_int() const {
  const size_t n = raw.size();
  if ((type != ValueType::i8 && type != ValueType::i16 && type != ValueType::i32 && type != ValueType::i64) || n == 0)
    throw std::logic_error(std::string("gguf::Value: as_int on a ") + value_type_name(type));
  uint64_t u = raw_le(raw);
  if (n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t{0} << (8 * n);  // sign-extend
  int64_t v;
  std::memcpy(&v, &u, 8);
  return v;
}

double Value::as_float() const {
  const uint64_t u = raw_le(raw);
  if (type == ValueType::f32) {
    const uint32_t w = static_cast<uint32_t>(u);
    float x;
    std::memcpy(&x, &w, 4);
    return x;
  }
  if (type != ValueType::f64) throw std::logic_error(std::string("gguf::Value: as_float on a ") + value_type_name(type));
  double x;
  std::memcpy(&x, &u, 8);
  return x;
}

bool Value::as_bool() const {
  if (type != ValueType::boolean) throw std::logic_error(std::string("gguf::Value: as_bool on a ") + value_type_name(type));
  return raw_le(raw) != 0;
}

const std::string& Value::as_string() const {
  if (type != ValueType::string)
    throw std::logic_error(std::string("gguf::Value: as_string on a ") + value_type_name(type));
  return str;
}

Value Value::element(uint64_t i) const {
  if (type != ValueType::array || i >= count) throw std::logic_error("gguf::Value: element out of range");
  if (elem_type == ValueType::string || elem_type == ValueType::array) return items[static_cast<size_t>(i)];
  Value v;
  v.type = elem_type;
  const size_t sz = value_type_size(elem_type);
  v.raw.assign(raw.begin() + static_cast<ptrdiff_t>(i * sz), raw.begin() + static_cast<ptrdiff_t>((i + 1) * sz));
  return v;
}

const char* ggml_type_name(uint32_t type) {
  const GgmlTypeInfo* t = ggml_info(type);
  return t ? t->name : nullptr;
}

uint64_t ggml_block_elements(uint32_t type) {
  const GgmlTypeInfo* t = ggml_info(type);
  return t ? t->block_elements : 0;
}

uint64_t ggml_block_bytes(uint32_t type) {
  const GgmlTypeInfo* t = ggml_info(type);
  return t ? t->block_bytes : 0;
}

std::optional<vkgmm::DType> dtype_of_ggml(uint32_t type) {
#define VKGMM_DTYPE_OF_GGML_(name, NAME, value, values, bytes, ggml) \
  if (type == ggml) return vkgmm::DType::name;
  VKGMM_DTYPES(VKGMM_DTYPE_OF_GGML_)
#undef VKGMM_DTYPE_OF_GGML_
  return std::nullopt;
}

uint32_t ggml_of_dtype(vkgmm::DType t) {
#define VKGMM_GGML_OF_DTYPE_(name, NAME, value, values, bytes, ggml) \
  if (t == vkgmm::DType::name) return ggml;
  VKGMM_DTYPES(VKGMM_GGML_OF_DTYPE_)
#undef VKGMM_GGML_OF_DTYPE_
  throw std::logic_error("gguf::ggml_of_dtype: unknown DType");
}

}  // namespace gguf
