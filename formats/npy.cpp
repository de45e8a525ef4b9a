// .npy reading and writing. The format: the magic "\x93NUMPY", a major and minor version byte, the header
// length (uint16 for 1.0, uint32 for 2.0 and 3.0, little-endian), then the header, a Python dict literal
// such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces and a '\n',
// then the raw data. The header is parsed by hand, accepting only that literal's grammar: a file numpy
// would not load (or that we would misread) must be refused, never half-understood.
#include "npy.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string_view>

namespace npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// A real header is a few hundred bytes; a huge length means a corrupt or hostile file, and refusing it
// early keeps us from allocating whatever the length field says.
constexpr size_t kMaxHeaderLen = size_t{1} << 20;

[[noreturn]] void fail(const std::string& name, const std::string& problem) {
  throw std::runtime_error(name + ": " + problem);
}

uint32_t read_le(const uint8_t* p, size_t bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}

// The size of the fixed part before the header text, after validating magic and version.
size_t preamble_len(const uint8_t* p, size_t avail, const std::string& name) {
  if (avail == 0) fail(name, "empty file, not a .npy file");
  const size_t cmp = avail < kMagicLen ? avail : kMagicLen;
  if (std::memcmp(p, kMagic, cmp) != 0) fail(name, "not a .npy file (bad magic)");
  if (avail < kMagicLen + 2) fail(name, "truncated .npy preamble (" + std::to_string(avail) + " bytes)");
  const int major = p[6], minor = p[7];
  if (minor != 0 || major < 1 || major > 3)
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  return kMagicLen + 2 + (major == 1 ? 2 : 4);
}

// The header dict's grammar, as numpy writes it and ast.literal_eval accepts it.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(std::string& descr, std::vector<int64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{');
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string("a key");
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (have_descr) malformed("duplicate key 'descr'");
        if (peek() == '[') fail(name_, "structured dtypes are not supported");
        descr = parse_string("the 'descr' value");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_order) malformed("duplicate key 'fortran_order'");
        if (parse_bool()) fail(name_, "fortran_order True is not supported (C order only)");
        have_order = true;
      } else if (key == "shape") {
        if (have_shape) malformed("duplicate key 'shape'");
        shape = parse_shape();
        have_shape = true;
      } else {
        malformed("unexpected key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        malformed("expected ',' or '}'");
      }
    }
    ++pos_;  // '}'
    if (!have_descr || !have_order || !have_shape)
      malformed("the dict must have exactly the keys 'descr', 'fortran_order' and 'shape'");
    // Only the padding may follow; anything else means the header length does not match the dict.
    skip_ws();
    if (pos_ != s_.size()) malformed("unexpected bytes after the header dict");
  }

 private:
  [[noreturn]] void malformed(const std::string& what) {
    fail(name_, "malformed .npy header: " + what + " at byte " + std::to_string(pos_) + " of the header");
  }
  char peek() {
    // Running off the end means the header length cut the dict short.
    if (pos_ >= s_.size()) fail(name_, "malformed .npy header: the dict is cut off by the header length");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) malformed(std::string("expected '") + c + "'");
    ++pos_;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  // A quoted string without escapes: no key or descr we accept needs one.
  std::string parse_string(const char* what) {
    const char q = peek();
    if (q != '\'' && q != '"') malformed(std::string("expected a string for ") + what);
    const size_t start = ++pos_;
    while (peek() != q) {
      const char c = s_[pos_];
      if (c == '\\' || c == '\n' || static_cast<unsigned char>(c) >= 0x80 || static_cast<unsigned char>(c) < 0x20)
        malformed(std::string("unsupported character in ") + what);
      ++pos_;
    }
    return std::string(s_.substr(start, pos_++ - start));
  }
  bool parse_bool() {
    for (std::string_view word : {std::string_view("True"), std::string_view("False")}) {
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return word == "True";
      }
    }
    malformed("expected True or False for 'fortran_order'");
  }
  // A tuple of non-negative decimal ints: "()", "(3,)", "(3, 4)", "(3, 4,)". "(3)" is an int, not a tuple.
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> dims;
    expect('(');
    skip_ws();
    bool trailing_comma = false;
    while (peek() != ')') {
      dims.push_back(parse_dim());
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        skip_ws();
        trailing_comma = true;
      } else if (peek() != ')') {
        malformed("expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    if (dims.size() == 1 && !trailing_comma) malformed("'shape' must be a tuple, e.g. (3,)");
    return dims;
  }
  int64_t parse_dim() {
    if (peek() == '-') fail(name_, "negative dimension in 'shape'");
    if (peek() < '0' || peek() > '9') malformed("expected an integer in 'shape'");
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const int d = s_[pos_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) fail(name_, "dimension in 'shape' overflows int64");
      v = v * 10 + d;
    }
    if (s_[start] == '0' && pos_ - start > 1) malformed("integer with leading zeros in 'shape'");
    return v;
  }

  std::string_view s_;
  const std::string& name_;
  size_t pos_ = 0;
};

struct Header {
  std::string descr;
  std::vector<int64_t> shape;
  uint64_t data_bytes = 0;
};

// Checks descr and shape, and works out the data size without overflowing.
void finish_header(Header& h, const std::string& name) {
  const std::string& d = h.descr;
  if (d != "<f4" && d != "<f2" && d != "<i4" && d != "<i8" && d != "|u1") {
    if (!d.empty() && d[0] == '>') fail(name, "big-endian dtype '" + d + "' is not supported (little-endian only)");
    if (d.find('O') != std::string::npos) fail(name, "object dtype '" + d + "' is not supported");
    fail(name, "unsupported dtype '" + d + "' (expected <f4, <f2, <i4, <i8 or |u1)");
  }
  uint64_t count = 1;
  for (int64_t dim : h.shape) {
    // Dims are non-negative here; a product past int64 can only come from a corrupt header.
    if (dim != 0 && count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(dim))
      fail(name, "the shape's element count overflows");
    count *= static_cast<uint64_t>(dim);
  }
  const uint64_t item = item_size(d);
  if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / item)
    fail(name, "the shape's byte size overflows");
  h.data_bytes = count * item;
}

Header parse_header_text(const uint8_t* text, size_t len, bool utf8, const std::string& name) {
  (void)utf8;  // 3.0 allows UTF-8, 1.0/2.0 latin-1; the parser takes ASCII only, so both are the same here.
  Header h;
  HeaderParser(std::string_view(reinterpret_cast<const char*>(text), len), name).parse(h.descr, h.shape);
  finish_header(h, name);
  return h;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string errno_text() { return std::strerror(errno); }

// Closes the file on every path out of read().
struct FileCloser {
  std::FILE* f;
  ~FileCloser() {
    if (f) std::fclose(f);
  }
};

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // an inherited non-blocking descriptor: wait for room
        pollfd ready{fd, POLLOUT, 0};
        ::poll(&ready, 1, -1);
        continue;
      }
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Where write() puts the bytes for `path`: into `file`, a regular file reached through any symbolic
// links (renaming onto a link would replace the link, not the file it names); when `direct`, into the
// existing non-regular file at `path` itself (a device such as /dev/null, or a FIFO); or into this
// process's open descriptor `fd` (/dev/stdout, /dev/fd/N), at its offset, whatever it is open on: a
// shell's `> log` is a regular file, which a rename would replace, and a new open would write from its
// start.
struct Destination {
  std::string file;
  bool direct = false;
  bool exists = false;
  int fd = -1;
};

// N where `p` is an entry N of a descriptor directory of this process (/proc/<our pid>/fd, or a
// thread's, /proc/<our pid>/task/<tid>/fd), however it is spelt (/proc/self/fd/1, /dev/fd/1,
// /proc/thread-self/fd/1, or "1" from inside one), else -1.
int own_descriptor(const std::string& p) {
  namespace fs = std::filesystem;
  const fs::path path(p);
  const std::string n = path.filename().string();
  if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) return -1;
  const std::string parent = path.has_parent_path() ? path.parent_path().string() : std::string(".");
  char* real = ::realpath(parent.c_str(), nullptr);
  if (!real) return -1;
  const std::string dir = real;
  std::free(real);
  const std::string mine = "/proc/" + std::to_string(getpid());
  const bool process_fds = dir == mine + "/fd";
  const bool thread_fds = dir.compare(0, mine.size() + 6, mine + "/task/") == 0 && dir.size() > 3 &&
                          dir.compare(dir.size() - 3, 3, "/fd") == 0;
  return process_fds || thread_fds ? std::stoi(n) : -1;
}

// The descriptor a chain of links from `path` reaches (/dev/stdout -> /proc/self/fd/1), or -1.
int descriptor_behind(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    if (const int fd = own_descriptor(p.string()); fd >= 0) return fd;
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return -1;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) return -1;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return -1;
}

Destination destination(const std::string& path) {
  if (path.empty()) fail("''", "an empty path names no file");
  if (const int fd = descriptor_behind(path); fd >= 0) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) fail(path, "descriptor " + std::to_string(fd) + " is not open: " + errno_text());
    if ((flags & O_ACCMODE) == O_RDONLY) fail(path, "descriptor " + std::to_string(fd) + " is not open for writing");
    Destination d;
    d.file = path, d.exists = true, d.fd = fd;
    return d;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail(path, "is a directory");
    if (!S_ISREG(st.st_mode)) return {path, true, true};
    // The file itself, whatever links lead to it. (Not for the non-regular case above: /dev/stdout's
    // links end in names such as "pipe:[1234]" that only open() understands.)
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) fail(path, "cannot resolve: " + errno_text());
    Destination d{real, false, true};
    std::free(real);
    return d;
  }
  if (errno != ENOENT) fail(path, errno_text());
  // Nothing there, or a link to nothing: the file is created where the last link points.
  namespace fs = std::filesystem;
  fs::path p(path);
  for (int hops = 0;; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) break;
    if (hops == 40) fail(path, "too many levels of symbolic links");
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) fail(path, "cannot read the link " + p.string() + ": " + ec.message());
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return {p.string(), false, false};
}

// Creates a new, empty file in the directory of `file`, returning its descriptor (-1 and errno on
// failure) and its name in `tmp`. The name is short and fixed in form, whatever the target's length
// (a 255-byte file name is valid, and so must its temporary be); O_EXCL with the process id and a
// counter keeps concurrent writers apart. Mode 0666 lets the umask decide permissions.
int create_temporary(const std::string& file, std::string& tmp) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = ".vkgmm-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".tmp";
    tmp = (dir / name).string();
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

}  // namespace

int64_t Array::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t item_size(const std::string& descr) {
  if (descr == "<f4" || descr == "<i4") return 4;
  if (descr == "<f2") return 2;
  if (descr == "<i8") return 8;
  if (descr == "|u1") return 1;
  throw std::invalid_argument("unsupported .npy dtype '" + descr + "'");
}

Array parse(const std::vector<uint8_t>& bytes, const std::string& name) {
  const size_t pre = preamble_len(bytes.data(), bytes.size(), name);
  if (bytes.size() < pre) fail(name, "truncated .npy header length");
  const size_t hlen = read_le(bytes.data() + kMagicLen + 2, pre - kMagicLen - 2);
  if (hlen > kMaxHeaderLen) fail(name, "absurd .npy header length " + std::to_string(hlen));
  if (bytes.size() - pre < hlen) fail(name, "truncated .npy header");
  Header h = parse_header_text(bytes.data() + pre, hlen, bytes[6] == 3, name);
  const uint64_t have = bytes.size() - pre - hlen;
  if (have < h.data_bytes)
    fail(name, "truncated data: expected " + std::to_string(h.data_bytes) + " bytes, found " + std::to_string(have));
  if (have > h.data_bytes)
    fail(name, std::to_string(have - h.data_bytes) + " unexpected bytes after the data");
  Array a{std::move(h.descr), std::move(h.shape), {}};
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(pre + hlen), bytes.end());
  return a;
}

Array read(const std::string& path) {
  // Streamed rather than slurped: the header's size claim is checked against the file size before the
  // data buffer is allocated.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory");
  FileCloser fc{std::fopen(path.c_str(), "rb")};
  if (!fc.f) fail(path, "cannot open: " + errno_text());

  uint8_t pre[12];
  const size_t got = std::fread(pre, 1, sizeof pre, fc.f);
  if (std::ferror(fc.f)) fail(path, "read error: " + errno_text());
  const size_t plen = preamble_len(pre, got, path);
  if (got < plen) fail(path, "truncated .npy header length");
  const size_t hlen = read_le(pre + kMagicLen + 2, plen - kMagicLen - 2);
  if (hlen > kMaxHeaderLen) fail(path, "absurd .npy header length " + std::to_string(hlen));

  std::vector<uint8_t> text(hlen);
  // Header bytes already read along with a 1.0 preamble (which is 10 bytes, not 12).
  const size_t carried = got - plen;
  // (Guarded: with hlen == 0, text.data() may be null, and memcpy from or to null is undefined.)
  if (hlen > 0) std::memcpy(text.data(), pre + plen, carried < hlen ? carried : hlen);
  if (carried < hlen && std::fread(text.data() + carried, 1, hlen - carried, fc.f) != hlen - carried)
    fail(path, "truncated .npy header");
  Header h = parse_header_text(text.data(), hlen, pre[6] == 3, path);

  if (std::fseek(fc.f, 0, SEEK_END) != 0) fail(path, "cannot seek: " + errno_text());
  const long end = std::ftell(fc.f);
  if (end < 0) fail(path, "cannot tell size: " + errno_text());
  const uint64_t start = plen + hlen;  // the header was read in full, so end >= start
  const uint64_t have = static_cast<uint64_t>(end) - start;
  if (have < h.data_bytes)
    fail(path, "truncated data: expected " + std::to_string(h.data_bytes) + " bytes, found " + std::to_string(have));
  if (have > h.data_bytes) fail(path, std::to_string(have - h.data_bytes) + " unexpected bytes after the data");

  Array a{std::move(h.descr), std::move(h.shape), {}};
  a.data.resize(h.data_bytes);
  if (std::fseek(fc.f, static_cast<long>(start), SEEK_SET) != 0) fail(path, "cannot seek: " + errno_text());
  if (!a.data.empty() && std::fread(a.data.data(), 1, a.data.size(), fc.f) != a.data.size())
    fail(path, "truncated data (short read)");
  return a;
}

void write(const std::string& path, const Array& array) {
  const size_t item = item_size(array.descr);
  for (int64_t d : array.shape)
    if (d < 0) throw std::invalid_argument("npy::write: negative dimension for " + path);
  if (array.data.size() != static_cast<uint64_t>(array.element_count()) * item)
    throw std::invalid_argument("npy::write: data size does not match shape for " + path);

  std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': " +
                       shape_text(array.shape) + ", }";
  // Version 1.0 unless the header outgrows its 16-bit length; the data starts 64-byte aligned.
  const bool v2 = header.size() + 1 + 64 > 0xffff;
  const size_t pre = v2 ? 12 : 10;
  header.append((64 - (pre + header.size() + 1) % 64) % 64, ' ');
  header += '\n';

  std::vector<uint8_t> head(kMagic, kMagic + kMagicLen);
  head.push_back(v2 ? 2 : 1);
  head.push_back(0);
  for (size_t i = 0; i < pre - kMagicLen - 2; ++i) head.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  head.insert(head.end(), header.begin(), header.end());

  const Destination dest = destination(path);
  if (dest.fd >= 0) {
    // Written where the descriptor stands, and left open: it is the process's, not ours.
    if (!write_all(dest.fd, head.data(), head.size()) || !write_all(dest.fd, array.data.data(), array.data.size()))
      fail(path, "write failed: " + errno_text());
    return;
  }
  if (dest.direct) {
    // A device or a FIFO: written in place, since renaming a file onto it would replace the node.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(path, "cannot open: " + errno_text());
    std::string problem;
    if (!write_all(fd, head.data(), head.size()) || !write_all(fd, array.data.data(), array.data.size()))
      problem = "write failed: " + errno_text();
    if (::close(fd) != 0 && problem.empty()) problem = "close failed: " + errno_text();
    if (!problem.empty()) fail(path, problem);
    return;
  }
  std::string tmp;
  const int fd = create_temporary(dest.file, tmp);
  if (fd < 0) fail(path, "cannot create a temporary file next to it: " + errno_text());
  bool ok = write_all(fd, head.data(), head.size()) && write_all(fd, array.data.data(), array.data.size());
  std::string problem = ok ? "" : "write failed: " + errno_text();
  // A file replaced keeps its permission bits (the temporary has the umask's); not set-id bits, which a
  // file written anew should not inherit.
  struct stat old {};
  if (ok && dest.exists && ::stat(dest.file.c_str(), &old) == 0 && ::fchmod(fd, old.st_mode & 0777) != 0) {
    ok = false;
    problem = "cannot give the new file the old one's mode: " + errno_text();
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    problem = "close failed: " + errno_text();
  }
  if (ok && std::rename(tmp.c_str(), dest.file.c_str()) != 0) {
    ok = false;
    problem = "cannot rename the temporary file into place: " + errno_text();
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    fail(path, problem);
  }
}

void check_writable(const std::string& path) {
  const Destination dest = destination(path);
  if (dest.fd >= 0) return;  // open for writing: destination() checked
  if (dest.direct) {
    if (::access(path.c_str(), W_OK) != 0) fail(path, "not writable: " + errno_text());
    return;
  }
  if (dest.exists && ::access(dest.file.c_str(), W_OK) != 0) fail(path, "not writable: " + errno_text());
  // access() on the directory would say yes to root everywhere, /proc and /sys included, and knows
  // nothing of a file system that refuses new files: creating the temporary is the only sure answer.
  std::string tmp;
  const int fd = create_temporary(dest.file, tmp);
  if (fd < 0) fail(path, "cannot create a file in its directory: " + errno_text());
  ::close(fd);
  ::unlink(tmp.c_str());
}

}  // namespace npy
