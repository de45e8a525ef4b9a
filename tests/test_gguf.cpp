// The GGUF v3 reader (formats/gguf.hpp) on files the test writes (tests/gguf_writer.hpp): several tensors
// of several types, key-values of every type, the default and a custom alignment, read back exactly; and
// every malformed case, made by corrupting a valid file, refused with a one-line message naming the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "block_formats.hpp"
#include "gguf.hpp"
#include "gguf_writer.hpp"

namespace {

using namespace gguf_test;
using gguf::ValueType;
using vkgmm::DType;
using vkgmm::test::all_dtypes;
using vkgmm::test::block_formats;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 31 * i + (i >> 7));
  return v;
}

// Bytes of `elements` values of a ggml type (its block size and bytes as the reader knows them).
size_t type_bytes(uint32_t type, uint64_t elements) {
  return static_cast<size_t>(elements / gguf::ggml_block_elements(type) * gguf::ggml_block_bytes(type));
}

TensorSpec spec(std::string name, std::vector<uint64_t> ne, uint32_t type, uint8_t seed) {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return {std::move(name), std::move(ne), type, pattern(type_bytes(type, n), seed)};
}

// Key-values of every type, arrays of fixed-size and of variable-size elements, nested, empty.
std::vector<std::pair<std::string, gguf::Value>> all_kvs() {
  return {
      {"general.architecture", str("vkgmm-test")},
      {"test.u8", u8(200)},
      {"test.i8", i8(-100)},
      {"test.u16", u16(60000)},
      {"test.i16", i16(-30000)},
      {"test.u32", u32(4000000000u)},
      {"test.i32", i32(-2000000000)},
      {"test.f32", f32(-1.5f)},
      {"test.bool_true", boolean(true)},
      {"test.bool_false", boolean(false)},
      {"test.string", str("héllo, \"world\"\n")},
      {"test.empty_string", str("")},
      {"test.u64", u64(0xfedcba9876543210ull)},
      {"test.i64", i64(std::numeric_limits<int64_t>::min())},
      {"test.f64", f64(3.141592653589793)},
      {"test.array_u8", array(ValueType::u8, {u8(1), u8(2), u8(255)})},
      {"test.array_i64", array(ValueType::i64, {i64(-1), i64(int64_t(1) << 40)})},
      {"test.array_f32", array(ValueType::f32, {f32(0.25f), f32(-8)})},
      {"test.array_bool", array(ValueType::boolean, {boolean(true), boolean(false)})},
      {"test.array_string", array(ValueType::string, {str("a"), str(""), str("tokens")})},
      {"test.array_empty", array(ValueType::f64, {})},
      {"test.array_nested", array(ValueType::array, {array(ValueType::string, {str("x"), str("yz")}),
                                                     array(ValueType::string, {}),
                                                     array(ValueType::u16, {u16(7)})})},
  };
}

// A file with tensors of every type vkgmm runs, of ranks 1 to 4, one of a type it does not (IQ2_XXS), and
// a zero-size one.
Writer sample(uint64_t alignment, bool with_alignment_kv) {
  Writer w(alignment);
  for (auto& [k, v] : all_kvs()) w.kv(k, v);
  if (with_alignment_kv) w.kv("general.alignment", u32(static_cast<uint32_t>(alignment)));
  w.tensor(spec("blk.0.ffn_down_exps.weight", {64, 3, 2}, gguf::kQ8_0, 1));
  w.tensor(spec("blk.0.ffn_up_exps.weight", {256, 2, 3}, gguf::kQ4_K, 2));
  w.tensor(spec("q4_0", {32, 5}, gguf::kQ4_0, 3));
  w.tensor(spec("q6_K", {512, 1, 2}, gguf::kQ6_K, 4));
  w.tensor(spec("mxfp4", {64, 2, 2}, gguf::kMXFP4, 5));
  w.tensor(spec("f32", {8, 3, 2}, gguf::kF32, 6));
  w.tensor(spec("f16", {5, 3}, gguf::kF16, 7));
  w.tensor(spec("bf16", {4, 2, 2}, gguf::kBF16, 8));
  w.tensor(spec("vec", {7}, gguf::kF32, 9));
  w.tensor(spec("four_d", {2, 2, 2, 2}, gguf::kF32, 10));
  w.tensor(spec("iq2_xxs", {256, 2}, 16, 11));
  w.tensor(spec("empty", {32, 0, 4}, gguf::kQ8_0, 12));
  return w;
}

void expect_same_value(const gguf::Value& a, const gguf::Value& b, const std::string& where) {
  ASSERT_EQ(a.type, b.type) << where;
  EXPECT_EQ(a.raw, b.raw) << where;
  EXPECT_EQ(a.str, b.str) << where;
  if (a.type != ValueType::array) return;
  ASSERT_EQ(a.elem_type, b.elem_type) << where;
  ASSERT_EQ(a.count, b.count) << where;
  ASSERT_EQ(a.items.size(), b.items.size()) << where;
  for (size_t i = 0; i < a.items.size(); ++i) expect_same_value(a.items[i], b.items[i], where + "[" + std::to_string(i) + "]");
}

class GgufTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("vkgmm_test_gguf_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string put(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return p;
  }

  // Checks the file written from `w` reads back exactly, through gguf::read and gguf::parse.
  void expect_reads_back(const Writer& w, uint64_t alignment, const std::vector<std::pair<std::string, gguf::Value>>& kvs,
                         const std::string& name) {
    Layout l;
    const std::vector<uint8_t> bytes = w.bytes(&l);
    const std::string path = put(name, bytes);
    for (const gguf::File& f : {gguf::read(path), gguf::parse(bytes.data(), bytes.size(), "mem")}) {
      EXPECT_EQ(f.version, 3u);
      EXPECT_EQ(f.alignment, alignment);
      EXPECT_EQ(f.data_offset, l.data_start);
      EXPECT_EQ(f.data_offset % alignment, 0u);
      EXPECT_EQ(f.file_size, bytes.size());
      ASSERT_EQ(f.kvs.size(), kvs.size());
      for (size_t i = 0; i < kvs.size(); ++i) {
        EXPECT_EQ(f.kvs[i].key, kvs[i].first);
        expect_same_value(f.kvs[i].value, kvs[i].second, kvs[i].first);
      }
      ASSERT_EQ(f.tensors.size(), 12u);
      for (size_t i = 0; i < f.tensors.size(); ++i) {
        const gguf::Tensor& t = f.tensors[i];
        EXPECT_EQ(t.offset, l.offsets[i]) << t.name;
        EXPECT_EQ(t.file_offset, l.data_start + l.offsets[i]) << t.name;
        EXPECT_EQ(t.size, type_bytes(t.ggml_type, t.elements())) << t.name;
        const std::vector<uint8_t> got = f.read_bytes(t);
        ASSERT_EQ(got.size(), t.size) << t.name;
        EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin() + static_cast<ptrdiff_t>(t.file_offset))) << t.name;
      }
    }
  }

  std::filesystem::path dir_;
};

// The message of the refusal of `bytes`, through parse and through read (which must agree).
std::string refusal(const std::vector<uint8_t>& bytes) {
  std::string m;
  try {
    gguf::parse(bytes.data(), bytes.size(), "input.gguf");
    return "(accepted)";
  } catch (const std::runtime_error& e) {
    m = e.what();
  }
  EXPECT_EQ(m.rfind("input.gguf: ", 0), 0u) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  return m;
}

#define EXPECT_REFUSED(bytes, needle)                                     \
  do {                                                                    \
    const std::string m_ = refusal(bytes);                                \
    EXPECT_NE(m_.find(needle), std::string::npos) << "message: " << m_; \
  } while (0)

TEST_F(GgufTest, ReadsBackEveryValueTypeAndTensorTypeDefaultAlignment) {
  auto kvs = all_kvs();
  expect_reads_back(sample(32, false), 32, kvs, "default.gguf");
}

TEST_F(GgufTest, ReadsBackCustomAlignment) {
  for (uint64_t a : {64u, 8u, 1u, 4096u}) {
    auto kvs = all_kvs();
    kvs.push_back({"general.alignment", u32(static_cast<uint32_t>(a))});
    expect_reads_back(sample(a, true), a, kvs, "align" + std::to_string(a) + ".gguf");
  }
}

TEST_F(GgufTest, TensorFields) {
  const std::vector<uint8_t> bytes = sample(64, true).bytes();
  const gguf::File f = gguf::parse(bytes.data(), bytes.size(), "x");
  const gguf::Tensor* t = f.find_tensor("blk.0.ffn_up_exps.weight");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->ne, (std::vector<uint64_t>{256, 2, 3}));
  EXPECT_EQ(t->ggml_type, 12u);
  EXPECT_EQ(t->dtype, DType::q4_K);
  EXPECT_EQ(t->size, 6u * 144u);
  EXPECT_EQ(f.find_tensor("q6_K")->size, 2u * 2u * 210u);
  EXPECT_EQ(f.find_tensor("mxfp4")->size, 2u * 2u * 2u * 17u);
  EXPECT_EQ(f.find_tensor("q4_0")->size, 5u * 18u);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_down_exps.weight")->size, 2u * 6u * 34u);
  EXPECT_EQ(f.find_tensor("bf16")->dtype, DType::bf16);
  EXPECT_EQ(f.find_tensor("f16")->size, 30u);
  EXPECT_FALSE(f.find_tensor("iq2_xxs")->dtype.has_value());  // parsed, sized, not runnable
  EXPECT_EQ(f.find_tensor("iq2_xxs")->size, 2u * 66u);
  EXPECT_EQ(f.find_tensor("empty")->size, 0u);
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
  EXPECT_EQ(f.find_kv("test.u32")->value.as_uint(), 4000000000u);
  EXPECT_EQ(f.find_kv("test.i8")->value.as_int(), -100);
  EXPECT_EQ(f.find_kv("test.i64")->value.as_int(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.find_kv("test.f32")->value.as_float(), -1.5);
  EXPECT_EQ(f.find_kv("test.f64")->value.as_float(), 3.141592653589793);
  EXPECT_TRUE(f.find_kv("test.bool_true")->value.as_bool());
  EXPECT_EQ(f.find_kv("test.array_i64")->value.element(1).as_int(), int64_t(1) << 40);
  EXPECT_EQ(f.find_kv("test.array_nested")->value.element(0).element(1).as_string(), "yz");
  EXPECT_EQ(f.find_kv("test.array_nested")->value.element(2).element(0).as_uint(), 7u);
  EXPECT_THROW(f.find_kv("test.u8")->value.as_int(), std::logic_error);
  // Every type id and its vkgmm type map both ways.
  for (DType d : all_dtypes()) {
    EXPECT_EQ(gguf::dtype_of_ggml(gguf::ggml_of_dtype(d)), d);
    EXPECT_EQ(gguf::ggml_block_elements(gguf::ggml_of_dtype(d)), vkgmm::block_elements(d));
    EXPECT_EQ(gguf::ggml_block_bytes(gguf::ggml_of_dtype(d)), vkgmm::block_bytes(d));
  }
  EXPECT_STREQ(gguf::ggml_type_name(39), "MXFP4");
  EXPECT_EQ(gguf::ggml_type_name(4), nullptr);  // Q4_2, removed
}

TEST_F(GgufTest, DataInAnyOrder) {
  Writer w = sample(32, false);
  w.reverse_data(true);
  Layout l;
  const std::vector<uint8_t> bytes = w.bytes(&l);
  const gguf::File f = gguf::parse(bytes.data(), bytes.size(), "x");
  EXPECT_GT(f.tensors[0].offset, f.tensors[1].offset);
  for (const gguf::Tensor& t : f.tensors) EXPECT_EQ(f.read_bytes(t).size(), t.size);
}

TEST_F(GgufTest, NoTensorsNoKvs) {
  const std::vector<uint8_t> bytes = Writer().bytes();
  const gguf::File f = gguf::parse(bytes.data(), bytes.size(), "x");
  EXPECT_TRUE(f.kvs.empty());
  EXPECT_TRUE(f.tensors.empty());
  // The header alone, without the padding a writer may leave out when nothing follows.
  const std::vector<uint8_t> bare(bytes.begin(), bytes.begin() + 24);
  EXPECT_NO_THROW(gguf::parse(bare.data(), bare.size(), "x"));
}

TEST_F(GgufTest, LoadExpertTensor) {
  const std::vector<uint8_t> bytes = sample(64, true).bytes();
  const std::string path = put("experts.gguf", bytes);
  const gguf::File f = gguf::read(path);
  const gguf::ExpertTensor e = gguf::load_expert_tensor(f, "blk.0.ffn_up_exps.weight");
  EXPECT_EQ(e.dtype, DType::q4_K);
  EXPECT_EQ(e.E, 3);
  EXPECT_EQ(e.n, 2);
  EXPECT_EQ(e.k, 256);
  EXPECT_EQ(e.bytes, pattern(6 * 144, 2));
  const gguf::ExpertTensor two = gguf::load_expert_tensor(f, "q4_0");  // 2-D: one expert
  EXPECT_EQ(two.E, 1);
  EXPECT_EQ(two.n, 5);
  EXPECT_EQ(two.k, 32);
  EXPECT_EQ(two.dtype, DType::q4_0);
  const gguf::ExpertTensor f32 = gguf::load_expert_tensor(f, "f32");
  EXPECT_EQ(f32.dtype, DType::f32);
  EXPECT_EQ(f32.bytes.size(), 8u * 3u * 2u * 4u);

  auto refused = [&](const std::string& name, const std::string& needle) {
    try {
      gguf::load_expert_tensor(f, name);
      ADD_FAILURE() << name << " accepted";
    } catch (const std::runtime_error& ex) {
      const std::string m = ex.what();
      EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
      EXPECT_NE(m.find(needle), std::string::npos) << m;
    }
  };
  refused("vec", "1 dims");
  refused("four_d", "4 dims");
  refused("iq2_xxs", "IQ2_XXS (ggml type 16)");
  refused("nope", "no tensor 'nope'");
}

// --- malformed files ---------------------------------------------------------------------------------

Writer small(uint64_t alignment = 32) {
  Writer w(alignment);
  w.kv("general.architecture", str("t"));
  if (alignment != 32) w.kv("general.alignment", u32(static_cast<uint32_t>(alignment)));
  w.kv("tokens", array(ValueType::string, {str("a"), str("bc")}));
  w.tensor(spec("a", {32, 2}, gguf::kQ8_0, 1));
  w.tensor(spec("b", {4, 3}, gguf::kF32, 2));
  return w;
}

TEST_F(GgufTest, RefusesEveryTruncation) {
  Layout l;
  const std::vector<uint8_t> good = small(64).bytes(&l);
  ASSERT_NO_THROW(gguf::parse(good.data(), good.size(), "x"));
  // The last tensor (b: 12 f32) ends before the file's final padding, which a file may leave out.
  const size_t data_end = l.data_start + l.offsets[1] + 48;
  ASSERT_LT(data_end, good.size());
  for (size_t n = 0; n < good.size(); ++n) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(n));
    if (n >= data_end) {
      EXPECT_NO_THROW(gguf::parse(cut.data(), cut.size(), "x")) << n;
      continue;
    }
    const std::string m = refusal(cut);
    if (n == 0)
      EXPECT_NE(m.find("empty file"), std::string::npos) << m;
    else if (n < l.header_end)  // inside the header: a field cut short, or a count the rest cannot hold
      EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("absurd") != std::string::npos ||
                  m.find("cannot fit") != std::string::npos)
          << n << ": " << m;
    else  // inside the padding or the data: the data section or a tensor past the end
      EXPECT_TRUE(m.find("truncated: the data section") != std::string::npos ||
                  m.find("past the end of the file") != std::string::npos)
          << n << ": " << m;
  }
  // The same through the file reader, at a few cuts.
  for (size_t n : {size_t{3}, size_t{10}, l.header_end - 1, data_end - 1}) {
    const std::string p = put("cut.gguf", std::vector<uint8_t>(good.begin(), good.begin() + static_cast<ptrdiff_t>(n)));
    EXPECT_THROW(gguf::read(p), std::runtime_error);
  }
}

TEST_F(GgufTest, RefusesBadMagicAndVersions) {
  std::vector<uint8_t> b = small().bytes();
  std::vector<uint8_t> m = b;
  m[3] = 'G';
  EXPECT_REFUSED(m, "bad magic");
  EXPECT_REFUSED(std::vector<uint8_t>({'G', 'G'}), "truncated");  // a prefix of the magic: too short
  EXPECT_REFUSED(std::vector<uint8_t>({'G', 'X'}), "bad magic");
  for (uint32_t v : {1u, 2u}) {
    std::vector<uint8_t> c = b;
    patch<uint32_t>(c, 4, v);
    EXPECT_REFUSED(c, "GGUF version " + std::to_string(v) + " is not supported: only version 3");
  }
  std::vector<uint8_t> c = b;
  patch<uint32_t>(c, 4, 4);
  EXPECT_REFUSED(c, "unsupported GGUF version 4");
  patch<uint32_t>(c, 4, 0x03000000u);
  EXPECT_REFUSED(c, "big-endian");
  EXPECT_REFUSED(std::vector<uint8_t>(), "empty file");
}

TEST_F(GgufTest, RefusesHugeCountsAndLengths) {
  Layout l;
  const std::vector<uint8_t> b = small().bytes(&l);
  std::vector<uint8_t> c = b;
  patch<uint64_t>(c, l.tensor_count, uint64_t(1) << 62);
  EXPECT_REFUSED(c, "absurd tensor count");
  c = b;
  patch<uint64_t>(c, l.kv_count, ~uint64_t{0});
  EXPECT_REFUSED(c, "absurd key-value count");
  c = b;
  patch<uint64_t>(c, l.kv_count, 3);  // a count the file could hold, but the tensor infos are not key-values
  EXPECT_TRUE(refusal(c) != "(accepted)");
  c = b;
  patch<uint64_t>(c, l.kv_key[0], uint64_t(1) << 40);  // key length
  EXPECT_REFUSED(c, "more than the 65535 allowed");
  c = b;
  patch<uint64_t>(c, l.kv_key[0], 60000);  // allowed for a key, past the end of the file
  EXPECT_REFUSED(c, "truncated");
  c = b;
  patch<uint64_t>(c, l.kv_type[0] + 4, ~uint64_t{0} - 3);  // the string value's length
  EXPECT_REFUSED(c, "bytes long");
  c = b;
  patch<uint64_t>(c, l.kv_type[1] + 8, uint64_t(1) << 61);  // the string array's count
  EXPECT_REFUSED(c, "cannot fit");
  c = b;
  patch<uint64_t>(c, l.infos[0].name, 65);  // a tensor name of 65 bytes
  EXPECT_REFUSED(c, "more than the 64 allowed");
}

TEST_F(GgufTest, RefusesBadValueTypes) {
  Layout l;
  const std::vector<uint8_t> b = small().bytes(&l);
  std::vector<uint8_t> c = b;
  patch<uint32_t>(c, l.kv_type[0], 13);
  EXPECT_REFUSED(c, "unknown value type 13");
  c = b;
  patch<uint32_t>(c, l.kv_type[1] + 4, 77);  // the array's element type
  EXPECT_REFUSED(c, "unknown array element type 77");

  Writer w;
  w.kv("flag", scalar(ValueType::boolean, uint8_t(2)));
  EXPECT_REFUSED(w.bytes(), "neither 0 nor 1");
  Writer wa;
  wa.kv("flags", array(ValueType::boolean, {boolean(true), scalar(ValueType::boolean, uint8_t(7))}));
  EXPECT_REFUSED(wa.bytes(), "at index 1");
  Writer e;
  e.kv("", u8(1));
  EXPECT_REFUSED(e.bytes(), "key 0 is empty");
  Writer nl;  // a key with a newline and a backslash: the message stays one line
  nl.kv("bad\nkey\\", u8(1));
  nl.kv("bad\nkey\\", u8(1));
  EXPECT_REFUSED(nl.bytes(), "duplicate key 'bad\\x0akey\\x5c'");
  Writer d;
  d.kv("x", u8(1));
  d.kv("x", u8(2));
  EXPECT_REFUSED(d.bytes(), "duplicate key 'x'");
  // Arrays nested past the limit.
  gguf::Value v = array(ValueType::u8, {});
  for (int i = 0; i < 20; ++i) v = array(ValueType::array, {v});
  Writer n;
  n.kv("deep", v);
  EXPECT_REFUSED(n.bytes(), "nested more than");
}

TEST_F(GgufTest, RefusesBadAlignment) {
  for (uint32_t a : {0u, 48u, 3u}) {
    Writer w;
    w.kv("general.alignment", u32(a));
    w.tensor(spec("a", {32, 2}, gguf::kQ8_0, 1));
    EXPECT_REFUSED(w.bytes(), "general.alignment " + std::to_string(a) + " is not a power of two");
  }
  Writer w;
  w.kv("general.alignment", u64(32));
  EXPECT_REFUSED(w.bytes(), "general.alignment must be a uint32, not uint64");
}

TEST_F(GgufTest, RefusesBadTensorInfos) {
  Layout l;
  const std::vector<uint8_t> b = small(64).bytes(&l);
  std::vector<uint8_t> c = b;
  patch<uint64_t>(c, l.infos[1].offset, l.offsets[1] + 32);  // aligned to 32, not to 64
  EXPECT_REFUSED(c, "not a multiple of the alignment 64");
  c = b;
  patch<uint64_t>(c, l.infos[1].offset, l.offsets[0]);  // both at the same place
  EXPECT_REFUSED(c, "overlap");
  c = b;
  patch<uint64_t>(c, l.infos[1].offset, 64 * 1000);
  EXPECT_REFUSED(c, "past the end of the file");
  c = b;
  patch<uint64_t>(c, l.infos[1].offset, ~uint64_t{63});  // aligned, and wraps when added to the start
  EXPECT_REFUSED(c, "past the end of the file");
  c = b;
  patch<uint32_t>(c, l.infos[0].type, 99);
  EXPECT_REFUSED(c, "unknown ggml type id 99");
  c = b;
  patch<uint32_t>(c, l.infos[0].type, 4);  // Q4_2: removed from ggml
  EXPECT_REFUSED(c, "unknown ggml type id 4");
  c = b;
  patch<uint32_t>(c, l.infos[0].n_dims, 0);
  EXPECT_REFUSED(c, "has 0 dimensions");
  c = b;
  patch<uint32_t>(c, l.infos[0].n_dims, 5);
  EXPECT_REFUSED(c, "has 5 dimensions");
  c = b;
  patch<uint64_t>(c, l.infos[0].ne, 48);  // Q8_0 rows of 48 values: not whole blocks of 32
  EXPECT_REFUSED(c, "not a multiple of its block of 32");
  c = b;
  patch<uint64_t>(c, l.infos[1].ne + 8, uint64_t(1) << 63);  // past int64
  EXPECT_REFUSED(c, "past int64 range");
  c = b;
  patch<uint64_t>(c, l.infos[1].ne, uint64_t(1) << 32);  // [2^32, 2^32]: the product overflows
  patch<uint64_t>(c, l.infos[1].ne + 8, uint64_t(1) << 32);
  EXPECT_REFUSED(c, "overflows");
  // Overlap between tensors that do not start at the same offset: a's data runs into b's.
  c = b;
  patch<uint64_t>(c, l.infos[0].ne + 8, 4);  // a: [32, 4] Q8_0 = 136 bytes at 0; b at 128
  EXPECT_REFUSED(c, "overlap");

  Writer dup;
  dup.tensor(spec("same", {4}, gguf::kF32, 1));
  dup.tensor(spec("same", {8}, gguf::kF32, 2));
  EXPECT_REFUSED(dup.bytes(), "duplicate tensor name 'same'");
}

TEST_F(GgufTest, RefusesUnreadableFiles) {
  EXPECT_THROW(gguf::read((dir_ / "missing.gguf").string()), std::runtime_error);
  try {
    gguf::read(dir_.string());
    ADD_FAILURE() << "read a directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
}

}  // namespace
