#include "isa_mix.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>

namespace gpu_report {

namespace {

bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// "BB12" -> 12, else -1.
int label_number(const std::string& s) {
  if (s.size() < 3 || !starts(s, "BB")) return -1;
  for (size_t i = 2; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
  return std::atoi(s.c_str() + 2);
}

std::vector<std::string> split_operands(const std::string& ops) {
  std::vector<std::string> out;
  std::stringstream ss(ops);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    // Modifiers after the last operand ("offen", "offset:16") are separated by spaces.
    const size_t sp = item.find(' ');
    if (sp != std::string::npos) item = item.substr(0, sp);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// An integer constant operand ("16", "-1", "0x200").
std::optional<long> constant_of(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 0);
  if (end == s.c_str() || *end != '\0') return std::nullopt;
  return v;
}

bool is_register(const std::string& s) {
  return s.size() >= 2 && (s[0] == 'v' || s[0] == 's') && std::isdigit(static_cast<unsigned char>(s[1]));
}

bool is_branch(const std::string& m) { return starts(m, "s_branch") || starts(m, "s_cbranch"); }
bool is_wait(const std::string& m) { return starts(m, "s_waitcnt") || starts(m, "s_nop") || starts(m, "s_delay_alu"); }
bool is_scalar_load(const std::string& m) { return starts(m, "s_load") || starts(m, "s_buffer_load"); }
bool is_shared_store(const std::string& m) { return starts(m, "ds_write") || starts(m, "ds_store"); }

// Bits of one element as a load mnemonic spells it.
int element_bits(const std::string& m) {
  static const std::pair<const char*, int> kWidths[] = {
      {"dwordx4", 128}, {"dwordx3", 96}, {"dwordx2", 64}, {"dword", 32},   {"b128", 128},      {"b96", 96},
      {"b64", 64},      {"b32", 32},     {"format_xyzw", 128}, {"format_xyz", 96}, {"format_xy", 64},
      {"format_x", 32}, {"ushort", 16},  {"sshort", 16}, {"short", 16},   {"u16", 16},        {"i16", 16},
      {"b16", 16},      {"ubyte", 8},    {"sbyte", 8},   {"u8", 8},       {"i8", 8},          {"b8", 8}};
  for (const auto& [part, bits] : kWidths)
    if (has(m, part)) return bits;
  return 32;
}

}  // namespace

bool is_fma(const std::string& m) {
  if (!starts(m, "v_")) return false;
  std::string op = m.substr(2);
  if (starts(op, "pk_")) op = op.substr(3);
  return starts(op, "fma") || starts(op, "mac_f") || starts(op, "mad_f") || starts(op, "mad_legacy") ||
         starts(op, "mad_mix") || starts(op, "dot");
}

double fma_work(const std::string& m) {
  if (!is_fma(m)) return 0;
  if (has(m, "dot8")) return 8;
  if (has(m, "dot4")) return 4;
  if (has(m, "dot2") || starts(m, "v_pk_")) return 2;
  return 1;
}

bool is_matrix(const std::string& m) {
  return starts(m, "v_wmma") || starts(m, "v_swmmac") || starts(m, "v_mfma") || starts(m, "v_smfmac");
}

double matrix_work(const std::string& m) {
  if (!is_matrix(m)) return 0;
  // The shape: the first "<M>x<N>x<K>" (CDNA's v_mfma_f32_32x32x8f16 runs the K digits into the type).
  for (size_t i = 0; i < m.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(m[i])) || (i > 0 && std::isdigit(static_cast<unsigned char>(m[i - 1]))))
      continue;
    double dims[3];
    size_t at = i;
    int n = 0;
    for (; n < 3; ++n) {
      size_t end = at;
      while (end < m.size() && std::isdigit(static_cast<unsigned char>(m[end]))) ++end;
      if (end == at) break;
      dims[n] = std::stod(m.substr(at, end - at));
      if (n < 2 && (end >= m.size() || m[end] != 'x')) break;
      at = end + 1;
    }
    if (n == 3) return dims[0] * dims[1] * dims[2];
  }
  return 0;
}

int shared_load_bits(const std::string& m) {
  if (!starts(m, "ds_read") && !starts(m, "ds_load")) return 0;
  const int pair = has(m, "read2") || has(m, "2addr") ? 2 : 1;
  return pair * element_bits(m);
}

int global_load_bits(const std::string& m) {
  if (!starts(m, "buffer_load") && !starts(m, "global_load") && !starts(m, "tbuffer_load") && !starts(m, "flat_load"))
    return 0;
  return element_bits(m);
}

std::vector<Instruction> parse_disassembly(const std::string& text) {
  std::vector<Instruction> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    // Drop the encoding comment ("; bf8a0000") and surrounding space.
    const size_t semi = line.find(';');
    if (semi != std::string::npos) line = line.substr(0, semi);
    line = trim(line);
    if (line.empty()) continue;
    if (line.back() == ':') {
      const int n = label_number(line.substr(0, line.size() - 1));
      if (n >= 0) out.push_back({"", "", n, -1});
      continue;
    }
    if (!std::islower(static_cast<unsigned char>(line[0]))) continue;
    Instruction ins;
    const size_t sp = line.find_first_of(" \t");
    ins.mnemonic = line.substr(0, sp);
    ins.operands = sp == std::string::npos ? "" : trim(line.substr(sp));
    if (is_branch(ins.mnemonic)) {
      const std::vector<std::string> ops = split_operands(ins.operands);
      if (!ops.empty()) ins.target = label_number(ops[0]);
    }
    out.push_back(std::move(ins));
  }
  return out;
}

std::vector<Loop> find_loops(const std::vector<Instruction>& code) {
  std::map<int, size_t> label_line;
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i].label >= 0) label_line[code[i].label] = i;
  std::map<size_t, size_t> ends;  // header line -> its last back edge
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i].target < 0) continue;
    auto it = label_line.find(code[i].target);
    if (it != label_line.end() && it->second <= i) ends[it->second] = std::max(ends[it->second], i);
  }
  std::vector<Loop> loops;
  for (const auto& [b, e] : ends) loops.push_back({b, e, 1, false, -1});
  // Sorted by header: a loop's enclosing loops come before it; the innermost is the last that contains it.
  for (size_t l = 0; l < loops.size(); ++l)
    for (size_t o = 0; o < l; ++o)
      if (loops[o].begin <= loops[l].begin && loops[l].end <= loops[o].end) loops[l].parent = int(o);
  return loops;
}

namespace {

// The loop's induction: a register compared with something in the loop's own lines, stepped by a
// constant add there. Returns the step and (when the compare's other side is a constant) the bound.
struct Induction {
  long step = 0;
  std::optional<long> bound;
};

std::optional<Induction> induction_of(const std::vector<Instruction>& code, const std::vector<int>& owner, int loop,
                                      const Loop& l) {
  auto own = [&](size_t i) { return owner[i] == loop; };
  for (size_t i = l.begin; i <= l.end; ++i) {
    if (!own(i) || !has(code[i].mnemonic, "cmp")) continue;
    const std::vector<std::string> ops = split_operands(code[i].operands);
    std::optional<long> bound;
    for (const std::string& o : ops)
      if (auto c = constant_of(o)) bound = c;
    for (const std::string& r : ops) {
      if (!is_register(r)) continue;
      for (size_t j = l.begin; j <= l.end; ++j) {
        const std::string& m = code[j].mnemonic;
        if (!own(j) || !(starts(m, "v_add") || starts(m, "s_add"))) continue;
        const std::vector<std::string> a = split_operands(code[j].operands);
        // v_add_nc_u32 vD, c, vD / s_add_u32 sD, sD, c / s_addk_i32 sD, c (dest first; v_add_co has a carry).
        if (a.empty() || a[0] != r) continue;
        bool reads_itself = starts(m, "s_addk");
        std::optional<long> step;
        for (size_t k = 1; k < a.size(); ++k) {
          if (a[k] == r) reads_itself = true;
          if (auto c = constant_of(a[k])) step = c;
        }
        if (reads_itself && step && *step > 0) return Induction{*step, bound};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

namespace {

double bytes_of(const std::map<int, double>& bits) {
  double b = 0;
  for (const auto& [width, n] : bits) b += width / 8.0 * n;
  return b;
}

}  // namespace

double Mix::shared_bytes() const { return bytes_of(shared_load_bits); }
double Mix::global_bytes() const { return bytes_of(global_load_bits); }

Mix main_loop_mix(const std::vector<Instruction>& code) {
  std::vector<Loop> loops = find_loops(code);
  std::vector<int> owner(code.size(), -1);  // the innermost loop of each line
  for (size_t l = 0; l < loops.size(); ++l)
    for (size_t i = loops[l].begin; i <= loops[l].end; ++i) owner[i] = int(l);  // later loops are inner
  for (size_t l = 0; l < loops.size(); ++l) {
    const std::optional<Induction> ind = induction_of(code, owner, int(l), loops[l]);
    if (ind && ind->bound && *ind->bound > 0) {
      loops[l].trips = std::ceil(double(*ind->bound) / double(ind->step));
      loops[l].trips_known = true;
    }
  }
  // Per iteration of loop l: its own lines, plus each directly nested loop's per-iteration mix times its trips.
  std::function<Mix(int)> mix_of = [&](int l) {
    Mix m;
    for (size_t i = loops[l].begin; i <= loops[l].end; ++i) {
      if (owner[i] != l || code[i].label >= 0) continue;
      const std::string& s = code[i].mnemonic;
      m.instructions += 1;
      if (is_fma(s)) m.fma += 1, m.fma_work += fma_work(s);
      if (is_matrix(s)) m.matrix += 1, m.matrix_work += matrix_work(s);
      if (is_branch(s)) m.branches += 1;
      else if (is_wait(s)) m.waits += 1;
      else if (starts(s, "s_barrier")) m.barriers += 1;
      else if (is_scalar_load(s)) m.scalar_loads += 1;
      else if (starts(s, "v_")) m.valu += 1;
      else if (starts(s, "s_")) m.salu += 1;
      if (int b = shared_load_bits(s)) m.shared_loads += 1, m.shared_load_bits[b] += 1;
      if (is_shared_store(s)) m.shared_stores += 1;
      if (int b = global_load_bits(s)) m.global_loads += 1, m.global_load_bits[b] += 1;
    }
    for (size_t c = 0; c < loops.size(); ++c) {
      if (loops[c].parent != l) continue;
      const Mix inner = mix_of(int(c));
      const double t = loops[c].trips;
      m.instructions += t * inner.instructions;
      m.fma += t * inner.fma;
      m.fma_work += t * inner.fma_work;
      m.matrix += t * inner.matrix;
      m.matrix_work += t * inner.matrix_work;
      m.valu += t * inner.valu;
      m.salu += t * inner.salu;
      m.branches += t * inner.branches;
      m.waits += t * inner.waits;
      m.barriers += t * inner.barriers;
      m.scalar_loads += t * inner.scalar_loads;
      m.shared_loads += t * inner.shared_loads;
      m.shared_stores += t * inner.shared_stores;
      m.global_loads += t * inner.global_loads;
      for (const auto& [b, n] : inner.shared_load_bits) m.shared_load_bits[b] += t * n;
      for (const auto& [b, n] : inner.global_load_bits) m.global_load_bits[b] += t * n;
      m.nested_loops += 1 + inner.nested_loops;
      m.unknown_trips += (loops[c].trips_known ? 0 : 1) + inner.unknown_trips;
    }
    return m;
  };
  Mix best;
  int best_loop = -1;
  for (size_t l = 0; l < loops.size(); ++l) {
    Mix m = mix_of(int(l));
    // Later loops are nested deeper: ">=" keeps the innermost of equals.
    const bool more = m.matrix > best.matrix || (m.matrix == best.matrix && m.fma >= best.fma);
    if ((m.matrix > 0 || m.fma > 0) && (best_loop < 0 || more)) best = m, best_loop = int(l);
  }
  if (best_loop < 0) return Mix{};
  best.found = true;
  best.loop_begin = loops[best_loop].begin;
  best.loop_end = loops[best_loop].end;
  if (const std::optional<Induction> ind = induction_of(code, owner, best_loop, loops[best_loop]))
    best.k_per_iteration = ind->step;
  return best;
}

}  // namespace gpu_report
