// GGUF v3 reading (see gguf.hpp). The layout, from ggml's docs/gguf.md, all little-endian:
//   header:       "GGUF", u32 version, u64 tensor_count, u64 kv_count, then kv_count key-values
//   key-value:    string key, u32 value type, the value
//   string:       u64 length, that many bytes (no terminator)
//   array:        u32 element type, u64 count, the elements (arrays may nest)
//   tensor info:  string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset (from the data section)
//   padding to general.alignment (default 32), then the data section.
// Every count is bounded by the bytes left in the file before anything is allocated from it.
#include "gguf.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <unordered_set>

namespace gguf {
namespace {

[[noreturn]] void fail(const std::string& name, const std::string& problem) {
  throw std::runtime_error(name + ": " + problem);
}

// A key or tensor name as messages show it: control bytes escaped (\xHH; a refusal is one line whatever
// the file holds), cut after 96 bytes (keys may be 64 KiB long).
std::string printable(const std::string& s) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < 96; ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch < 0x20 || ch == 0x7f || ch == '\\') {
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return s.size() > 96 ? out + "..." : out;
}

constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS
constexpr uint64_t kMaxKeyLen = 65535;      // docs/gguf.md: keys are at most 2^16 - 1 bytes
constexpr uint64_t kMaxTensorNameLen = 64;  // docs/gguf.md: tensor names are at most 64 bytes
constexpr int kMaxArrayDepth = 16;          // nested arrays: far past any real file, short of the stack

// --- where the bytes come from -----------------------------------------------------------------------
class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Copies n bytes at pos (pos + n <= size(), checked by the caller) into dst.
  virtual void copy(uint64_t pos, void* dst, size_t n) = 0;
};

class MemorySource final : public Source {
 public:
  MemorySource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint64_t size() const override { return size_; }
  void copy(uint64_t pos, void* dst, size_t n) override {
    if (n) std::memcpy(dst, data_ + pos, n);
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens `path` for reading; its size in *size. Refuses what is not a regular file.
int open_regular(const std::string& path, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

// Reads exactly n bytes at pos; false on a short read or an error.
bool pread_all(int fd, uint64_t pos, void* dst, size_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(pos));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    pos += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The header of a file, read through a window of 1 MiB (the header is read front to back in small pieces).
class FileSource final : public Source {
 public:
  FileSource(const std::string& path, int fd, uint64_t size) : path_(path), fd_(fd), size_(size) {}
  uint64_t size() const override { return size_; }
  void copy(uint64_t pos, void* dst, size_t n) override {
    auto* out = static_cast<uint8_t*>(dst);
    while (n > 0) {
      if (pos < win_start_ || pos >= win_start_ + win_.size()) fill(pos);
      const size_t at = static_cast<size_t>(pos - win_start_);
      const size_t take = std::min(n, win_.size() - at);
      std::memcpy(out, win_.data() + at, take);
      out += take;
      pos += take;
      n -= take;
    }
  }

 private:
  void fill(uint64_t pos) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kWindow, size_ - pos));
    win_.resize(len);
    if (!pread_all(fd_, pos, win_.data(), len)) fail(path_, "read error (did the file shrink?)");
    win_start_ = pos;
  }
  static constexpr size_t kWindow = size_t{1} << 20;
  const std::string& path_;
  int fd_;
  uint64_t size_;
  std::vector<uint8_t> win_;
  uint64_t win_start_ = 0;
};

// --- the cursor over the header ----------------------------------------------------------------------
class Cursor {
 public:
  Cursor(Source& src, const std::string& name) : src_(src), name_(name) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return src_.size() - pos_; }
  const std::string& name() const { return name_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining())
      fail(name_, "truncated: " + what + " at offset " + std::to_string(pos_) + " needs " + std::to_string(n) +
                      " bytes, " + std::to_string(remaining()) + " remain");
  }
  void bytes(void* dst, size_t n, const std::string& what) {
    need(n, what);
    src_.copy(pos_, dst, n);
    pos_ += n;
  }
  uint32_t u32(const std::string& what) {
    uint8_t b[4];
    bytes(b, 4, what);
    return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  }
  uint64_t u64(const std::string& what) {
    uint8_t b[8];
    bytes(b, 8, what);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | b[i];
    return v;
  }
  // A GGUF string of at most max_len bytes (the length checked against the file before allocating).
  std::string str(const std::string& what, uint64_t max_len) {
    const uint64_t len = u64("the length of " + what);
    if (len > max_len)
      fail(name_, what + " is " + std::to_string(len) + " bytes long, more than the " + std::to_string(max_len) +
                      " allowed");
    if (len > remaining())
      fail(name_, "truncated: " + what + " at offset " + std::to_string(pos_) + " is " + std::to_string(len) +
                      " bytes long, " + std::to_string(remaining()) + " remain");
    std::string s(static_cast<size_t>(len), '\0');
    bytes(s.data(), s.size(), what);
    return s;
  }

 private:
  Source& src_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

bool known_value_type(uint32_t t) { return t <= uint32_t(ValueType::f64); }

// The fewest bytes one element of type t takes in the file (the bound on an array's count).
uint64_t min_encoded_size(ValueType t) {
  if (t == ValueType::string) return 8;   // its length
  if (t == ValueType::array) return 12;   // element type + count
  return value_type_size(t);
}

Value read_value(Cursor& c, ValueType type, const std::string& what, int depth);

void check_bools(const Cursor& c, const std::vector<uint8_t>& raw, const std::string& what) {
  for (size_t i = 0; i < raw.size(); ++i)
    if (raw[i] > 1)
      fail(c.name(), what + ": bool value " + std::to_string(raw[i]) + (raw.size() > 1 ? " at index " + std::to_string(i) : "") +
                         " is neither 0 nor 1");
}

Value read_array(Cursor& c, const std::string& what, int depth) {
  if (depth >= kMaxArrayDepth)
    fail(c.name(), what + ": arrays nested more than " + std::to_string(kMaxArrayDepth) + " deep");
  Value v;
  v.type = ValueType::array;
  const uint32_t et = c.u32("the element type of " + what);
  if (!known_value_type(et)) fail(c.name(), what + ": unknown array element type " + std::to_string(et));
  v.elem_type = ValueType(et);
  v.count = c.u64("the element count of " + what);
  const uint64_t min_size = min_encoded_size(v.elem_type);
  if (v.count > c.remaining() / min_size)
    fail(c.name(), what + ": array of " + std::to_string(v.count) + " " + value_type_name(v.elem_type) +
                       " elements cannot fit in the " + std::to_string(c.remaining()) + " bytes left");
  if (v.elem_type != ValueType::string && v.elem_type != ValueType::array) {
    v.raw.resize(static_cast<size_t>(v.count * min_size));
    c.bytes(v.raw.data(), v.raw.size(), what);
    if (v.elem_type == ValueType::boolean) check_bools(c, v.raw, what);
    return v;
  }
  for (uint64_t i = 0; i < v.count; ++i)  // grows as elements are read: bounded by the bytes consumed
    v.items.push_back(read_value(c, v.elem_type, what + "[" + std::to_string(i) + "]", depth + 1));
  return v;
}

Value read_value(Cursor& c, ValueType type, const std::string& what, int depth) {
  if (type == ValueType::array) return read_array(c, what, depth);
  Value v;
  v.type = type;
  if (type == ValueType::string) {
    v.str = c.str(what, std::numeric_limits<uint64_t>::max());
    return v;
  }
  v.raw.resize(value_type_size(type));
  c.bytes(v.raw.data(), v.raw.size(), what);
  if (type == ValueType::boolean) check_bools(c, v.raw, what);
  return v;
}

// a * b, or nullopt when it overflows 64 bits.
std::optional<uint64_t> mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::nullopt;
  return a * b;
}

std::string dims_str(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// GGUF's names of the types vkgmm runs, from VKGMM_DTYPES (whose C names are GGUF's): "F32, F16, ...".
std::string runnable_types() {
  std::string s;
#define VKGMM_GGUF_RUNNABLE_(name, NAME, value, values, bytes, ggml) s += (s.empty() ? "" : ", ") + std::string(#NAME);
  VKGMM_DTYPES(VKGMM_GGUF_RUNNABLE_)
#undef VKGMM_GGUF_RUNNABLE_
  return s;
}

std::string type_str(uint32_t type) {
  const char* n = ggml_type_name(type);
  return std::string(n ? n : "unknown") + " (ggml type " + std::to_string(type) + ")";
}

Tensor read_tensor_info(Cursor& c, uint64_t index, uint64_t alignment) {
  Tensor t;
  const std::string what = "tensor info " + std::to_string(index);
  t.name = c.str("the name of " + what, kMaxTensorNameLen);
  const std::string tn = "tensor '" + printable(t.name) + "'";
  const uint32_t n_dims = c.u32("the n_dims of " + tn);
  if (n_dims < 1 || n_dims > kMaxDims)
    fail(c.name(), tn + " has " + std::to_string(n_dims) + " dimensions; GGUF tensors have 1 to " +
                       std::to_string(kMaxDims));
  t.ne.resize(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) t.ne[d] = c.u64("ne[" + std::to_string(d) + "] of " + tn);
  t.ggml_type = c.u32("the type of " + tn);
  t.offset = c.u64("the offset of " + tn);

  const uint64_t block_elements = ggml_block_elements(t.ggml_type);
  const uint64_t block_bytes = ggml_block_bytes(t.ggml_type);
  if (block_elements == 0)
    fail(c.name(), tn + " has unknown ggml type id " + std::to_string(t.ggml_type) +
                       " (not defined by ggml, or no longer in GGUF files)");
  uint64_t count = 1;
  for (uint64_t d : t.ne) {
    if (d > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(c.name(), tn + " has dims " + dims_str(t.ne) + ": " + std::to_string(d) + " is past int64 range");
    const std::optional<uint64_t> p = mul(count, d);
    if (!p || *p > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(c.name(), tn + " has dims " + dims_str(t.ne) + " whose element count overflows 64-bit integers");
    count = *p;
  }
  if (t.ne[0] % block_elements != 0)
    fail(c.name(), tn + " of type " + type_str(t.ggml_type) + " has rows of " + std::to_string(t.ne[0]) +
                       " values, not a multiple of its block of " + std::to_string(block_elements));
  const std::optional<uint64_t> size = mul(count / block_elements, block_bytes);
  if (!size) fail(c.name(), tn + " has dims " + dims_str(t.ne) + " whose size in bytes overflows 64 bits");
  t.size = *size;
  if (t.offset % alignment != 0)
    fail(c.name(), tn + " has offset " + std::to_string(t.offset) + ", not a multiple of the alignment " +
                       std::to_string(alignment));
  t.dtype = dtype_of_ggml(t.ggml_type);
  return t;
}

// general.alignment: a u32 power of two (ggml's rule; docs/gguf.md also asks for a multiple of 8, which
// ggml's own reader does not enforce), 32 when absent.
uint64_t alignment_of(const File& f) {
  const KeyValue* kv = f.find_kv("general.alignment");
  if (!kv) return 32;
  if (kv->value.type != ValueType::u32)
    fail(f.name, std::string("general.alignment must be a uint32, not ") + value_type_name(kv->value.type));
  const uint64_t a = kv->value.as_uint();
  if (a == 0 || (a & (a - 1)) != 0) fail(f.name, "general.alignment " + std::to_string(a) + " is not a power of two");
  return a;
}

// Every tensor inside the data section, and no two sharing a byte.
void check_tensor_placement(const File& f) {
  const uint64_t data_len = f.file_size - f.data_offset;
  for (const Tensor& t : f.tensors)
    if (t.offset > data_len || t.size > data_len - t.offset)
      fail(f.name, "tensor '" + printable(t.name) + "' (offset " + std::to_string(t.offset) + ", " + std::to_string(t.size) +
                       " bytes) runs past the end of the file: the data section holds " + std::to_string(data_len) +
                       " bytes");
  std::vector<size_t> order(f.tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return f.tensors[a].offset < f.tensors[b].offset; });
  const Tensor* reach = nullptr;  // the tensor ending furthest so far
  for (size_t i : order) {
    const Tensor& t = f.tensors[i];
    if (t.size == 0) continue;  // holds no byte, so shares none
    if (reach && t.offset < reach->offset + reach->size)
      fail(f.name, "tensors '" + printable(reach->name) + "' (offset " + std::to_string(reach->offset) + ", " +
                       std::to_string(reach->size) + " bytes) and '" + printable(t.name) + "' (offset " +
                       std::to_string(t.offset) + ") overlap");
    if (!reach || t.offset + t.size > reach->offset + reach->size) reach = &t;
  }
}

void parse_into(File& f, Source& src) {
  Cursor c(src, f.name);
  f.file_size = src.size();
  if (f.file_size == 0) fail(f.name, "empty file, not a GGUF file");
  uint8_t magic[4] = {0, 0, 0, 0};
  const size_t have = static_cast<size_t>(std::min<uint64_t>(4, f.file_size));
  src.copy(0, magic, have);
  if (std::memcmp(magic, "GGUF", have) != 0) fail(f.name, "not a GGUF file (bad magic)");
  c.bytes(magic, 4, "the magic");
  f.version = c.u32("the version");
  if (f.version == 1 || f.version == 2)
    fail(f.name, "GGUF version " + std::to_string(f.version) + " is not supported: only version 3 is read");
  if (f.version != 3) {
    const bool swapped = f.version == 0x03000000u || f.version == 0x02000000u || f.version == 0x01000000u;
    fail(f.name, "unsupported GGUF version " + std::to_string(f.version) + " (expected 3)" +
                     (swapped ? "; a big-endian file? only little-endian files are read" : ""));
  }
  const uint64_t n_tensors = c.u64("the tensor count");
  const uint64_t n_kv = c.u64("the key-value count");
  // Each key-value takes at least 13 bytes (key length, type, a 1-byte value), each tensor info at least
  // 32 (name length, n_dims, one ne, type, offset): counts past what the file can hold are refused here.
  if (n_kv > c.remaining() / 13)
    fail(f.name, "absurd key-value count " + std::to_string(n_kv) + ": the " + std::to_string(c.remaining()) +
                     " bytes left cannot hold them (corrupt or truncated file)");
  if (n_tensors > c.remaining() / 32)
    fail(f.name, "absurd tensor count " + std::to_string(n_tensors) + ": the " + std::to_string(c.remaining()) +
                     " bytes left cannot hold them (corrupt or truncated file)");

  std::unordered_set<std::string> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    kv.key = c.str("key " + std::to_string(i), kMaxKeyLen);
    if (kv.key.empty()) fail(f.name, "key " + std::to_string(i) + " is empty");
    if (!keys.insert(kv.key).second) fail(f.name, "duplicate key '" + printable(kv.key) + "'");
    const std::string what = "key '" + printable(kv.key) + "'";
    const uint32_t type = c.u32("the value type of " + what);
    if (!known_value_type(type)) fail(f.name, what + " has unknown value type " + std::to_string(type));
    kv.value = read_value(c, ValueType(type), what, 0);
    f.kvs.push_back(std::move(kv));
  }
  f.alignment = alignment_of(f);

  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Tensor t = read_tensor_info(c, i, f.alignment);
    if (!names.insert(t.name).second) fail(f.name, "duplicate tensor name '" + printable(t.name) + "'");
    f.tensors.push_back(std::move(t));
  }
  const uint64_t end = c.pos();
  f.data_offset = (end + f.alignment - 1) / f.alignment * f.alignment;  // end <= file size: no overflow
  if (!f.tensors.empty() && f.data_offset > f.file_size)
    fail(f.name, "truncated: the data section would start at offset " + std::to_string(f.data_offset) +
                     ", past the end of the file (" + std::to_string(f.file_size) + " bytes)");
  if (f.data_offset > f.file_size) f.data_offset = f.file_size;  // no tensors: nothing follows the header
  for (Tensor& t : f.tensors) t.file_offset = f.data_offset + t.offset;  // checked below; may wrap until then
  check_tensor_placement(f);
}

}  // namespace

uint64_t Tensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;  // checked against overflow when the file was read
  return n;
}

const KeyValue* File::find_kv(const std::string& key) const {
  for (const KeyValue& kv : kvs)
    if (kv.key == key) return &kv;
  return nullptr;
}

const Tensor* File::find_tensor(const std::string& tensor_name) const {
  for (const Tensor& t : tensors)
    if (t.name == tensor_name) return &t;
  return nullptr;
}

std::vector<uint8_t> File::read_bytes(const Tensor& t) const {
  if (t.file_offset > file_size || t.size > file_size - t.file_offset)
    fail(name, "tensor '" + printable(t.name) + "' lies outside the file");  // not one of this file's tensors
  std::vector<uint8_t> out(static_cast<size_t>(t.size));
  if (memory_) {
    if (!out.empty()) std::memcpy(out.data(), memory_->data() + t.file_offset, out.size());
    return out;
  }
  uint64_t size = 0;
  const Fd fd(open_regular(name, &size));
  if (size != file_size) fail(name, "the file changed size since its header was read");
  if (!pread_all(fd.get(), t.file_offset, out.data(), out.size()))
    fail(name, "read error in tensor '" + printable(t.name) + "'");
  return out;
}

File read(const std::string& path) {
  File f;
  f.name = path;
  uint64_t size = 0;
  const Fd fd(open_regular(path, &size));
  FileSource src(path, fd.get(), size);
  parse_into(f, src);
  return f;
}

File parse(const uint8_t* data, size_t size, const std::string& name) {
  File f;
  f.name = name;
  auto copy = std::make_shared<std::vector<uint8_t>>(data, data + size);
  MemorySource src(copy->data(), copy->size());
  parse_into(f, src);
  f.memory_ = std::move(copy);
  return f;
}

ExpertTensor load_expert_tensor(const File& file, const std::string& tensor_name) {
  const Tensor* t = file.find_tensor(tensor_name);
  const std::string tn = "tensor '" + printable(tensor_name) + "'";
  if (!t) {
    std::string names;
    for (size_t i = 0; i < file.tensors.size() && i < 8; ++i) names += (i ? ", " : "") + printable(file.tensors[i].name);
    if (file.tensors.size() > 8) names += ", ...";
    fail(file.name, "no " + tn + " (the file has " + std::to_string(file.tensors.size()) + " tensors" +
                        (names.empty() ? "" : ": " + names) + ")");
  }
  if (t->ne.size() != 2 && t->ne.size() != 3)
    fail(file.name, tn + " has " + std::to_string(t->ne.size()) + " dims " + dims_str(t->ne) +
                        "; an expert tensor is [k, n, E] or [k, n] (GGUF order)");
  if (!t->dtype)
    fail(file.name, tn + " is " + type_str(t->ggml_type) +
                        ", which vkgmm does not run (it runs " + runnable_types() + ")");
  ExpertTensor e;
  e.dtype = *t->dtype;
  e.k = static_cast<int64_t>(t->ne[0]);
  e.n = static_cast<int64_t>(t->ne[1]);
  e.E = t->ne.size() == 3 ? static_cast<int64_t>(t->ne[2]) : 1;
  e.bytes = file.read_bytes(*t);
  return e;
}

}  // namespace gguf
