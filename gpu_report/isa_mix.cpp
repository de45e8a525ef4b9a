// The ISA-independent part: which reader, the loops, their trip counts and the main loop's mix.
#include "isa_mix.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>

namespace gpu_report {

namespace isa_text {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t e = i;
    while (e < s.size() && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
    if (e > i) out.push_back(s.substr(i, e - i));
    i = e;
  }
  return out;
}

std::optional<long> integer(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 0);
  if (end == s.c_str() || *end != '\0') return std::nullopt;
  return v;
}

}  // namespace isa_text

using isa_text::integer;

std::optional<Isa> isa_of_representation(const std::string& name) {
  std::string n = name;
  for (char& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](const char* part) { return n.find(part) != std::string::npos; };
  if (!has("assembly") || has("nir")) return std::nullopt;
  if (has("nak")) return Isa::nak;
  if (has("gen") || has("intel")) return Isa::intel;
  return Isa::aco;
}

std::vector<Instruction> parse_disassembly(const std::string& text, Isa isa) {
  switch (isa) {
    case Isa::nak: return parse_nak(text);
    case Isa::intel: return parse_intel(text);
    case Isa::aco: break;
  }
  return parse_aco(text);
}

bool Loop::contains(size_t line) const {
  for (const auto& [b, e] : spans)
    if (b <= line && line <= e) return true;
  return false;
}

size_t Loop::lines() const {
  size_t n = 0;
  for (const auto& [b, e] : spans) n += e - b + 1;
  return n;
}

namespace {

// Loops laid out in one piece: from a label to the last branch back to it.
std::vector<Loop> loops_from_text(const std::vector<Instruction>& code) {
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
  for (const auto& [b, e] : ends) {
    Loop l;
    l.begin = b, l.end = e, l.spans = {{b, e}};
    loops.push_back(std::move(l));
  }
  return loops;
}

// Loops from the listed successors: for each header (a block some block at or below it branches back
// to), the blocks that reach one of those back edges without passing the header.
std::vector<Loop> loops_from_successors(const std::vector<Instruction>& code) {
  struct Block {
    size_t first, last;
    std::vector<int> succs;
  };
  std::map<int, Block> blocks;  // label -> block
  std::vector<int> order;
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i].label < 0) continue;
    if (!order.empty()) blocks[order.back()].last = i - 1;
    blocks[code[i].label] = {i, code.size() - 1, code[i].successors.value_or(std::vector<int>{})};
    order.push_back(code[i].label);
  }
  std::map<int, std::vector<int>> preds;
  std::map<int, std::vector<int>> latches;  // header -> blocks branching back to it
  for (const auto& [label, b] : blocks)
    for (int s : b.succs) {
      auto it = blocks.find(s);
      if (it == blocks.end()) continue;
      preds[s].push_back(label);
      if (it->second.first <= b.first) latches[s].push_back(label);
    }
  std::vector<Loop> loops;
  for (const auto& [header, from] : latches) {
    std::set<int> body = {header};
    std::vector<int> work;
    for (int l : from)
      if (body.insert(l).second) work.push_back(l);
    while (!work.empty()) {
      const int b = work.back();
      work.pop_back();
      for (int p : preds[b])
        if (body.insert(p).second) work.push_back(p);
    }
    Loop l;
    l.begin = blocks[header].first;
    for (int b : from) l.end = std::max(l.end, blocks[b].last);
    std::vector<std::pair<size_t, size_t>> spans;
    for (int b : body) spans.emplace_back(blocks[b].first, blocks[b].last);
    std::sort(spans.begin(), spans.end());
    for (const auto& s : spans) {
      if (!l.spans.empty() && l.spans.back().second + 1 == s.first) l.spans.back().second = s.second;
      else l.spans.push_back(s);
    }
    loops.push_back(std::move(l));
  }
  std::sort(loops.begin(), loops.end(), [](const Loop& a, const Loop& b) { return a.begin < b.begin; });
  return loops;
}

}  // namespace

std::vector<Loop> find_loops(const std::vector<Instruction>& code) {
  const bool listed = std::any_of(code.begin(), code.end(), [](const Instruction& i) { return i.successors.has_value(); });
  std::vector<Loop> loops = listed ? loops_from_successors(code) : loops_from_text(code);
  // Sorted by header; the innermost enclosing loop is the smallest other loop holding both ends.
  for (size_t l = 0; l < loops.size(); ++l) {
    size_t best = 0;
    for (size_t o = 0; o < loops.size(); ++o) {
      if (o == l || !loops[o].contains(loops[l].begin) || !loops[o].contains(loops[l].end)) continue;
      const size_t n = loops[o].lines();
      if (n > loops[l].lines() && (loops[l].parent < 0 || n < best)) loops[l].parent = int(o), best = n;
    }
  }
  return loops;
}

namespace {

// The loop's induction: a register compared with something in the loop's own lines, stepped by a
// constant add there. Returns the step and (when the compare's other side is a constant) the bound.
struct Induction {
  long step = 0;
  std::optional<long> bound;
};

// A register-to-register move (ACO's s_mov / v_mov, NAK's and Intel's mov).
bool is_copy(const Instruction& a) {
  const std::string& m = a.mnemonic;
  const bool mov = m == "mov" || isa_text::starts(m, "mov.") || isa_text::starts(m, "mov(") ||
                   isa_text::starts(m, "s_mov") || isa_text::starts(m, "v_mov");
  return mov && a.dests.size() == 1 && a.sources.size() == 1 && !integer(a.sources[0]);
}

std::optional<Induction> induction_of(const std::vector<Instruction>& code, const std::vector<int>& owner, int loop,
                                      const Loop& l) {
  std::vector<size_t> own;  // the loop's own lines, nested loops' left out
  for (const auto& [b, e] : l.spans)
    for (size_t i = b; i <= e; ++i)
      if (owner[i] == loop) own.push_back(i);
  for (size_t i : own) {
    if (!code[i].traits.compare) continue;
    const std::vector<std::string>& ops = code[i].sources;
    std::optional<long> bound;
    for (const std::string& o : ops)
      if (auto c = integer(o)) bound = c;
    for (const std::string& r : ops) {
      if (integer(r)) continue;
      // The counter's names: r, and a register the loop copies into r (NAK 26 steps a uniform counter
      // into another register and moves it back at the loop's end).
      std::vector<std::string> names{r};
      for (size_t j : own)
        if (is_copy(code[j]) && code[j].dests[0] == r) names.push_back(code[j].sources[0]);
      auto named = [&](const std::string& x) { return std::find(names.begin(), names.end(), x) != names.end(); };
      for (size_t j : own) {
        const Instruction& a = code[j];
        if (!a.traits.add || a.dests.empty() || !named(a.dests[0])) continue;
        bool reads_itself = false;
        std::optional<long> step;
        for (const std::string& s : a.sources) {
          if (s == r) reads_itself = true;
          if (auto c = integer(s)) step = c;
        }
        if (reads_itself && step && *step > 0) return Induction{*step, bound};
      }
    }
  }
  return std::nullopt;
}

double bytes_of(const std::map<int, double>& bits) {
  double b = 0;
  for (const auto& [width, n] : bits) b += width / 8.0 * n;
  return b;
}

void count(Mix& m, const Traits& t) {
  m.instructions += 1;
  if (t.fma) m.fma += 1, m.fma_work += t.fma_work;
  if (t.matrix) m.matrix += 1, m.matrix_work += t.matrix_work;
  if (t.branch) m.branches += 1;
  else if (t.wait) m.waits += 1;
  else if (t.barrier) m.barriers += 1;
  else if (t.scalar_load) m.scalar_loads += 1;
  else if (t.valu) m.valu += 1;
  else if (t.salu) m.salu += 1;
  if (t.shared_load_bits) m.shared_loads += 1, m.shared_load_bits[t.shared_load_bits] += 1;
  if (t.shared_store) m.shared_stores += 1;
  if (t.global_load_bits) m.global_loads += 1, m.global_load_bits[t.global_load_bits] += 1;
  if (t.local_load) m.local_loads += 1;
  if (t.local_store) m.local_stores += 1;
}

// m += t * inner: a nested loop's per-iteration mix, run t times.
void add_nested(Mix& m, const Mix& inner, double t, bool trips_known) {
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
  m.local_loads += t * inner.local_loads;
  m.local_stores += t * inner.local_stores;
  for (const auto& [b, n] : inner.shared_load_bits) m.shared_load_bits[b] += t * n;
  for (const auto& [b, n] : inner.global_load_bits) m.global_load_bits[b] += t * n;
  m.nested_loops += 1 + inner.nested_loops;
  m.unknown_trips += (trips_known ? 0 : 1) + inner.unknown_trips;
}

}  // namespace

double Mix::shared_bytes() const { return bytes_of(shared_load_bits); }
double Mix::global_bytes() const { return bytes_of(global_load_bits); }

Mix main_loop_mix(const std::vector<Instruction>& code) {
  std::vector<Loop> loops = find_loops(code);
  std::vector<int> owner(code.size(), -1);  // the innermost (smallest) loop holding each line
  for (size_t l = 0; l < loops.size(); ++l)
    for (const auto& [b, e] : loops[l].spans)
      for (size_t i = b; i <= e; ++i)
        if (owner[i] < 0 || loops[l].lines() < loops[owner[i]].lines()) owner[i] = int(l);
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
    for (const auto& [b, e] : loops[l].spans)
      for (size_t i = b; i <= e; ++i)
        if (owner[i] == l && code[i].label < 0) count(m, code[i].traits);
    for (size_t c = 0; c < loops.size(); ++c)
      if (loops[c].parent == l) add_nested(m, mix_of(int(c)), loops[c].trips, loops[c].trips_known);
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
