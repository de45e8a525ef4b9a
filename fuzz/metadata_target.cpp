// Fuzz target body for make_group_metadata (see targets.hpp). The bytes are decoded into valid arguments
// only: the plans check the preconditions (tests/test_errors.cpp), the builder relies on them.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "targets.hpp"
#include "vkgmm/metadata.hpp"

namespace vkgmm::fuzz {

namespace {

// Reads little-endian integers off the input; past its end, zeros.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint64_t take(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{pos_ < size_ ? data_[pos_++] : uint8_t{0}} << (8 * i);
    return v;
  }
  bool done() const { return pos_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string at(const char* what, size_t i) { return std::string(what) + "[" + std::to_string(i) + "]"; }

}  // namespace

std::string metadata_one(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const int64_t G = 1 + static_cast<int64_t>(in.take(1) % 96);
  const int64_t m = static_cast<int64_t>(in.take(2) % 5000);
  const int64_t tm = 1 + static_cast<int64_t>(in.take(2) % 600);
  const uint64_t flags = in.take(1);
  const bool visit_empty = flags & 1;
  const int64_t start = static_cast<int64_t>(in.take(1)) % G;
  const int64_t num = static_cast<int64_t>(in.take(1)) % (G - start + 1);
  // Sizes from a budget of m rows (so the sum stays <= m): each group takes a share of what is left;
  // a size byte of 0 or 1 means an empty group, which the builder treats specially.
  std::vector<int32_t> sizes(G, 0);
  int64_t left = (flags & 2) ? m : m - static_cast<int64_t>(in.take(2)) % (m + 1);
  for (int64_t g = 0; g < G; ++g) {
    const uint64_t b = in.take(2);
    if ((b & 0xff) <= 1 || left == 0) continue;
    const int64_t s = (flags & 4) && g == G - 1 ? left : 1 + static_cast<int64_t>(b % static_cast<uint64_t>(left));
    sizes[g] = static_cast<int32_t>(s);
    left -= s;
  }

  const GroupMetadata md = make_group_metadata(sizes, m, tm, start, num, visit_empty);

  // group_offsets: the prefix sums.
  if (md.group_offsets.size() != static_cast<size_t>(G + 1)) return "group_offsets has the wrong length";
  for (int64_t g = 0; g <= G; ++g) {
    const int64_t want = g == 0 ? 0 : md.group_offsets[g - 1] + sizes[g - 1];
    if (md.group_offsets[g] != want) return at("group_offsets", g) + " is not the prefix sum";
  }

  // The model: each active group visits, in order, every m tile its rows touch; an empty one (with
  // visit_empty) visits the tile its offset falls in, clamped to the last tile (0 when there is none).
  const int64_t tiles_m = (m + tm - 1) / tm;
  std::vector<std::pair<int32_t, int32_t>> want;
  int64_t total_visits = 0;
  for (int64_t g = 0; g < G; ++g) {
    const int64_t lo = md.group_offsets[g], hi = md.group_offsets[g + 1];
    std::vector<std::pair<int32_t, int32_t>> visits;
    if (hi > lo) {
      for (int64_t t = lo / tm; t <= (hi - 1) / tm; ++t) visits.emplace_back(int32_t(g), int32_t(t));
    } else if (visit_empty) {
      visits.emplace_back(int32_t(g), int32_t(std::max<int64_t>(0, std::min(lo / tm, tiles_m - 1))));
    }
    total_visits += static_cast<int64_t>(visits.size());
    if (g >= start && g < start + num) want.insert(want.end(), visits.begin(), visits.end());
  }

  if (md.num_tiles != static_cast<int64_t>(want.size()))
    return "num_tiles = " + std::to_string(md.num_tiles) + ", the model has " + std::to_string(want.size());
  const size_t length = static_cast<size_t>(std::max<int64_t>({tiles_m + G - 1, total_visits, 0}));
  if (md.group_ids.size() != length || md.m_tile_ids.size() != length)
    return "the visit arrays have length " + std::to_string(md.group_ids.size()) + " / " +
           std::to_string(md.m_tile_ids.size()) + ", expected " + std::to_string(length);
  for (size_t i = 0; i < want.size(); ++i)
    if (md.group_ids[i] != want[i].first || md.m_tile_ids[i] != want[i].second)
      return "visit " + std::to_string(i) + " is (" + std::to_string(md.group_ids[i]) + ", " +
             std::to_string(md.m_tile_ids[i]) + "), the model has (" + std::to_string(want[i].first) + ", " +
             std::to_string(want[i].second) + ")";
  // Padding past num_tiles is never visited, but must still index a real group and tile.
  for (size_t i = want.size(); i < length; ++i) {
    if (md.group_ids[i] < 0 || md.group_ids[i] >= G) return at("group_ids", i) + " (padding) is out of range";
    if (md.m_tile_ids[i] < 0 || md.m_tile_ids[i] >= std::max<int64_t>(tiles_m, 1))
      return at("m_tile_ids", i) + " (padding) is out of range";
  }

  // gmm's visit list over the same window: every row of [0, m) in exactly one visit, each visit's rows
  // inside its group (or, for a fill visit, outside the active groups), at most tm of them.
  const int64_t fill = tm * (1 + static_cast<int64_t>(flags >> 4) % 4);
  const GmmVisits gv = make_gmm_visits(md.group_offsets, m, tm, start, num, fill);
  if (gv.groups.size() != gv.row_starts.size()) return "gmm visits: lists of different lengths";
  const int64_t active_lo = md.group_offsets[start], active_hi = md.group_offsets[start + num];
  std::vector<uint8_t> covered(static_cast<size_t>(m), 0);
  for (size_t i = 0; i < gv.groups.size(); ++i) {
    const int64_t g = gv.groups[i], r0 = gv.row_starts[i];
    int64_t lo, hi;
    if (g >= 0) {
      if (g < start || g >= start + num) return at("gmm visit", i) + " names an inactive group";
      lo = md.group_offsets[g], hi = md.group_offsets[g + 1];
    } else {
      lo = r0 < active_lo ? 0 : active_hi, hi = r0 < active_lo ? active_lo : m;
    }
    const int64_t stride = g >= 0 ? tm : fill;
    if (r0 < lo || r0 >= hi || (r0 - lo) % stride != 0) return at("gmm visit", i) + " starts outside its range";
    for (int64_t r = r0; r < std::min(r0 + stride, hi); ++r)
      if (covered[static_cast<size_t>(r)]++) return "gmm visits: row " + std::to_string(r) + " visited twice";
  }
  for (int64_t r = 0; r < m; ++r)
    if (!covered[static_cast<size_t>(r)]) return "gmm visits: row " + std::to_string(r) + " never visited";
  return "";
}

}  // namespace vkgmm::fuzz
