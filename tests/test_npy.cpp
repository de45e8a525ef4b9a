// Tests of the command line's .npy reader and writer: round trips, the header layout numpy expects, and
// a refusal (naming the file) for every kind of malformed or unsupported file, built byte by byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "npy.hpp"

namespace fs = std::filesystem;

namespace {

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("vkgmm_test_npy_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string put(const std::string& name, const std::vector<uint8_t>& bytes) const {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                             static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  // The files in the test directory: the writer must leave no temporaries behind.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

// A .npy file by hand: magic, version, a length field of the version's width (hlen unless overridden),
// the header text and the data.
std::vector<uint8_t> npy_bytes(int major, const std::string& header, const std::vector<uint8_t>& data,
                               int64_t hlen_override = -1, int minor = 0) {
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), static_cast<uint8_t>(minor)};
  const uint64_t hlen = hlen_override >= 0 ? static_cast<uint64_t>(hlen_override) : header.size();
  const int width = major == 1 ? 2 : 4;
  for (int i = 0; i < width; ++i) b.push_back(static_cast<uint8_t>(hlen >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& order = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Expects read() to throw a runtime_error whose message names the file and contains `needle`.
void expect_refused(const std::string& file, const std::string& needle) {
  try {
    npy::read(file);
    ADD_FAILURE() << "read accepted " << file << " (expected: " << needle << ")";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(file), std::string::npos) << "message does not name the file: " << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "expected '" << needle << "' in: " << msg;
  }
}

TEST_F(NpyTest, RoundTripF32) {
  npy::Array a{"<f4", {2, 3}, f32_bytes({1, 2, 3, 4, 5, -6.5f})};
  npy::write(path("a.npy"), a);
  const npy::Array b = npy::read(path("a.npy"));
  EXPECT_EQ(b.descr, "<f4");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b.data, a.data);
  EXPECT_EQ(b.element_count(), 6);
  EXPECT_EQ(listing(), std::vector<std::string>{"a.npy"});
}

TEST_F(NpyTest, RoundTripOtherTypesAndShapes) {
  const std::vector<npy::Array> arrays = {
      {"<f2", {4}, {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x00, 0xff, 0x7b}},
      {"<i4", {1, 2}, {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}},
      {"<i8", {1}, {7, 0, 0, 0, 0, 0, 0, 0}},
      {"|u1", {2, 3}, {0, 1, 0x7f, 0x80, 0xfe, 0xff}},  // bytes: quantized blocks
      {"<f4", {}, f32_bytes({3.25f})},        // 0-d
      {"<f4", {0, 5}, {}},                    // empty
      {"<f2", {2, 0, 3}, {}},
      {"<f4", {1, 1, 1, 2}, f32_bytes({1, 2})},
      {"|u1", {1, 2, 3}, {0, 1, 2, 0x7f, 0x80, 0xff}},  // raw quantized blocks
  };
  for (const auto& a : arrays) {
    npy::write(path("x.npy"), a);  // overwrites the previous one
    const npy::Array b = npy::read(path("x.npy"));
    EXPECT_EQ(b.descr, a.descr);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"x.npy"});
}

TEST_F(NpyTest, WrittenHeaderIsVersion1Aligned) {
  npy::write(path("a.npy"), {"<f4", {3}, f32_bytes({1, 2, 3})});
  std::ifstream in(path("a.npy"), std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(std::memcmp(b.data(), "\x93NUMPY\x01\x00", 8), 0);
  const size_t hlen = b[8] | (b[9] << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  ASSERT_EQ(b.size(), 10 + hlen + 12);
  EXPECT_EQ(b[10 + hlen - 1], '\n');
  const std::string header(b.begin() + 10, b.begin() + 10 + static_cast<long>(hlen));
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 0), 0u) << header;
}

TEST_F(NpyTest, ReadsVersions2And3AndSpacing) {
  const auto data = f32_bytes({1, 2});
  for (int major : {1, 2, 3}) {
    const npy::Array a = npy::read(put("v.npy", npy_bytes(major, dict("<f4", "(2,)") + "   \n", data)));
    EXPECT_EQ(a.shape, std::vector<int64_t>{2});
    EXPECT_EQ(a.data, data);
  }
  // Other key orders, double quotes, no trailing comma, odd spacing, no padding: all valid literals.
  const std::string h = "{ \"shape\" : ( 1 , 2 ) , 'fortran_order':False,'descr':\"<f4\"}";
  const npy::Array a = npy::read(put("s.npy", npy_bytes(3, h, data)));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
  const npy::Array z = npy::read(put("z.npy", npy_bytes(1, dict("<i8", "()"), std::vector<uint8_t>(8, 0))));
  EXPECT_TRUE(z.shape.empty());
}

TEST_F(NpyTest, ParseMatchesRead) {
  const auto bytes = npy_bytes(2, dict("<i4", "(2,)"), {1, 0, 0, 0, 2, 0, 0, 0});
  const npy::Array a = npy::parse(bytes, "mem");
  EXPECT_EQ(a.descr, "<i4");
  EXPECT_EQ(a.data.size(), 8u);
  EXPECT_THROW(npy::parse(npy_bytes(1, dict(">f4", "(1,)"), {0, 0, 0, 0}), "mem"), std::runtime_error);
}

TEST_F(NpyTest, RefusesMissingEmptyAndDirectory) {
  expect_refused(path("missing.npy"), "cannot open");
  expect_refused(put("empty.npy", {}), "empty file");
  fs::create_directory(path("d.npy"));
  expect_refused(path("d.npy"), "is a directory");
}

TEST_F(NpyTest, RefusesBadMagicAndVersion) {
  auto b = npy_bytes(1, dict("<f4", "(1,)"), f32_bytes({1}));
  b[1] = 'X';
  expect_refused(put("magic.npy", b), "bad magic");
  expect_refused(put("text.npy", {'h', 'i'}), "bad magic");
  expect_refused(put("short.npy", {0x93, 'N', 'U'}), "truncated");
  expect_refused(put("v4.npy", npy_bytes(4, dict("<f4", "(1,)"), f32_bytes({1}))), "version 4.0");
  expect_refused(put("v11.npy", npy_bytes(1, dict("<f4", "(1,)"), f32_bytes({1}), -1, 1)), "version 1.1");
}

TEST_F(NpyTest, RefusesTruncatedAndAbsurdHeaders) {
  const std::string h = dict("<f4", "(1,)");
  // Preamble cut inside the length field.
  expect_refused(put("len.npy", {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 5}), "truncated");
  // Length field larger than the file.
  expect_refused(put("trunc.npy", npy_bytes(1, h, {}, static_cast<int64_t>(h.size()) + 100)), "truncated .npy header");
  expect_refused(put("trunc3.npy", npy_bytes(3, h, {}, 5000)), "truncated .npy header");
  // Over 1 MiB: refused from the length alone.
  expect_refused(put("absurd.npy", npy_bytes(2, h, {}, int64_t{1} << 24)), "absurd");
  expect_refused(put("absurd2.npy", npy_bytes(2, h, {}, 0xffffffffLL)), "absurd");
}

TEST_F(NpyTest, RefusesHeaderLengthNotMatchingDict) {
  const std::string h = dict("<f4", "(1,)");
  const auto data = f32_bytes({1});
  // Length too short: the dict is cut off.
  expect_refused(put("short.npy", npy_bytes(1, h, data, static_cast<int64_t>(h.size()) - 3)),
                 "cut off");
  // Length too long: the data is swallowed into the header.
  expect_refused(put("long.npy", npy_bytes(1, h + "\n", data, static_cast<int64_t>(h.size()) + 3)),
                 "after the header dict");
}

TEST_F(NpyTest, RefusesUnsupportedDtypes) {
  const auto four = f32_bytes({1});
  expect_refused(put("be.npy", npy_bytes(1, dict(">f4", "(1,)"), four)), "big-endian");
  expect_refused(put("obj.npy", npy_bytes(1, dict("|O", "(1,)"), std::vector<uint8_t>(8, 0))), "object dtype");
  expect_refused(put("f8.npy", npy_bytes(1, dict("<f8", "(1,)"), std::vector<uint8_t>(8, 0))), "unsupported dtype '<f8'");
  expect_refused(put("i1.npy", npy_bytes(1, dict("|i1", "(4,)"), four)), "unsupported dtype");
  expect_refused(put("u2.npy", npy_bytes(1, dict("<u2", "(2,)"), four)), "unsupported dtype");
  expect_refused(put("native.npy", npy_bytes(1, dict("=f4", "(1,)"), four)), "unsupported dtype");
  const std::string structured = "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }";
  expect_refused(put("struct.npy", npy_bytes(1, structured, four)), "structured");
}

TEST_F(NpyTest, RefusesFortranOrder) {
  expect_refused(put("f.npy", npy_bytes(1, dict("<f4", "(1, 1)", "True"), f32_bytes({1}))), "fortran_order");
}

TEST_F(NpyTest, RefusesMalformedDicts) {
  const auto four = f32_bytes({1});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{'descr': '<f4', 'shape': (1,), }", "exactly the keys"},                      // missing key
      {"{'descr': '<f4', 'fortran_order': False, 'extra': 1, 'shape': (1,)}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "duplicate"},
      {dict("<f4", "(1)"), "must be a tuple"},                                         // an int, not a tuple
      {dict("<f4", "[1]"), "expected '('"},
      {dict("<f4", "(01,)"), "leading zeros"},
      {dict("<f4", "(1.0,)"), "expected ',' or ')'"},
      {dict("<f4", "(1,,)"), "expected an integer"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", "expected ',' or '}'"},
      {"['descr', '<f4']", "expected '{'"},
      {"{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (1,)}", "unsupported character"},
      {"", "cut off"},
  };
  int i = 0;
  for (const auto& [header, needle] : cases)
    expect_refused(put("m" + std::to_string(i++) + ".npy", npy_bytes(1, header, four)), needle);
}

TEST_F(NpyTest, RefusesBadShapes) {
  expect_refused(put("neg.npy", npy_bytes(1, dict("<f4", "(-1,)"), {})), "negative dimension");
  expect_refused(put("neg2.npy", npy_bytes(1, dict("<f4", "(2, -3)"), {})), "negative dimension");
  expect_refused(put("big.npy", npy_bytes(1, dict("<f4", "(99999999999999999999,)"), {})), "overflows int64");
  expect_refused(put("prod.npy", npy_bytes(1, dict("<f4", "(4294967296, 4294967296)"), {})), "element count overflows");
  expect_refused(put("bytes.npy", npy_bytes(1, dict("<i8", "(2305843009213693952,)"), {})), "byte size overflows");
  // A zero dimension makes any product empty, however large the others.
  const npy::Array z = npy::read(put("zero.npy", npy_bytes(1, dict("<f4", "(0, 9223372036854775807)"), {})));
  EXPECT_TRUE(z.data.empty());
}

TEST_F(NpyTest, RefusesTruncatedAndTrailingData) {
  const std::string h = dict("<f4", "(2, 2)");
  expect_refused(put("short.npy", npy_bytes(1, h, f32_bytes({1, 2, 3}))), "truncated data: expected 16 bytes, found 12");
  expect_refused(put("none.npy", npy_bytes(2, h, {})), "truncated data");
  // A huge claimed shape with a tiny file must be refused without allocating the claim.
  expect_refused(put("huge.npy", npy_bytes(1, dict("<f4", "(1000000000000,)"), f32_bytes({1}))), "truncated data");
  expect_refused(put("long.npy", npy_bytes(1, h, f32_bytes({1, 2, 3, 4, 5}))), "4 unexpected bytes after the data");
}

TEST_F(NpyTest, WriterRefusesInconsistentArrays) {
  EXPECT_THROW(npy::write(path("a.npy"), {"<f4", {2}, f32_bytes({1})}), std::invalid_argument);
  EXPECT_THROW(npy::write(path("a.npy"), {"<f8", {1}, std::vector<uint8_t>(8)}), std::invalid_argument);
  EXPECT_THROW(npy::write(path("a.npy"), {"<f4", {-1}, {}}), std::invalid_argument);
  EXPECT_TRUE(listing().empty());
}

TEST_F(NpyTest, WriterFailureLeavesNothing) {
  // No such directory: the temporary cannot even be created.
  try {
    npy::write(path("nodir/a.npy"), {"<f4", {1}, f32_bytes({1})});
    ADD_FAILURE() << "write into a missing directory succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nodir/a.npy"), std::string::npos) << e.what();
  }
  // The target is a directory: the rename fails after the data was written; the temporary must go.
  fs::create_directory(path("target.npy"));
  EXPECT_THROW(npy::write(path("target.npy"), {"<f4", {1}, f32_bytes({1})}), std::runtime_error);
  EXPECT_EQ(listing(), std::vector<std::string>{"target.npy"});
  EXPECT_TRUE(fs::is_directory(path("target.npy")));
}

TEST_F(NpyTest, WriterReplacesExistingFile) {
  npy::write(path("a.npy"), {"<f4", {3}, f32_bytes({1, 2, 3})});
  npy::write(path("a.npy"), {"<f2", {1}, {0x00, 0x3c}});
  const npy::Array b = npy::read(path("a.npy"));
  EXPECT_EQ(b.descr, "<f2");
  EXPECT_EQ(b.shape, std::vector<int64_t>{1});
  EXPECT_EQ(listing(), std::vector<std::string>{"a.npy"});
}

}  // namespace
