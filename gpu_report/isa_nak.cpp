// NVIDIA assembly as NVK's NAK prints it:
//   block 439 L578 [438, 571] -> {
//         r20       = iadd3 r20 0x10 rZ                 // delay=6
//   @!p0              bra L738
//   } -> [568, 569]
// Blocks are labelled by their number; the successor list closes each block.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>

#include "isa_mix.hpp"

namespace gpu_report {

namespace {

using isa_text::integer;
using isa_text::trim;
using isa_text::words;

using isa_text::starts;

std::vector<std::string> parts_of(const std::string& mnemonic) {
  std::vector<std::string> out;
  std::stringstream ss(mnemonic);
  std::string p;
  while (std::getline(ss, p, '.')) out.push_back(p);
  return out;
}

bool any_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

// Memory type bits from the mnemonic's parts ("ld.shared.strong.cta.b128": 128).
int type_bits(const std::vector<std::string>& parts) {
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    const std::string& p = *it;
    if (p.size() >= 2 && (p[0] == 'b' || p[0] == 'u' || p[0] == 'i') && std::isdigit(static_cast<unsigned char>(p[1])))
      return std::atoi(p.c_str() + 1);
  }
  return 32;
}

// 32-bit registers a destination list names: "r24..28" is 4, "r5" is 1; predicates none.
int register_bits(const std::vector<std::string>& dests) {
  int n = 0;
  for (const std::string& d : dests) {
    if (d.size() < 2 || d[0] != 'r' || !std::isdigit(static_cast<unsigned char>(d[1]))) continue;
    const size_t dots = d.find("..");
    n += dots == std::string::npos ? 1 : std::atoi(d.c_str() + dots + 2) - std::atoi(d.c_str() + 1);
  }
  return 32 * n;
}

// The M x N x K of a matrix mnemonic: ".m16n8k16", or the digits run together (".16816": M 16 or 8, N 8).
double shape_work(const std::vector<std::string>& parts) {
  for (const std::string& p : parts) {
    int m = 0, n = 0, k = 0;
    if (std::sscanf(p.c_str(), "m%dn%dk%d", &m, &n, &k) == 3) return double(m) * n * k;
    if (p.size() >= 3 && p.find_first_not_of("0123456789") == std::string::npos) {
      const size_t mlen = starts(p, "16") ? 2 : 1;
      if (p[mlen] != '8' || p.size() < mlen + 2) continue;
      return std::stod(p.substr(0, mlen)) * 8 * std::stod(p.substr(mlen + 1));
    }
  }
  return 0;
}

bool is_uniform(const std::string& reg) { return starts(reg, "ur") || starts(reg, "up"); }

Traits traits_of(const Instruction& ins) {
  Traits t;
  const std::vector<std::string> parts = parts_of(ins.mnemonic);
  const std::string& op = parts[0];
  auto part = [&](const char* p) {
    for (const std::string& q : parts)
      if (q == p) return true;
    return false;
  };
  if (op == "ffma" || op == "dfma" || op == "hfma2" || starts(op, "idp4")) {
    t.fma = true;
    t.fma_work = op == "hfma2" ? 2 : starts(op, "idp4") ? 4 : 1;
  }
  if (op == "hmma" || op == "imma" || op == "dmma") t.matrix = true, t.matrix_work = shape_work(parts);
  t.compare = any_of(op, {"isetp", "fsetp", "dsetp", "hsetp2"});
  // An induction step: one register plus one constant (iadd3 r20 0x10 rZ), not the carry half (.x).
  t.add = op == "iadd3" && !part("x") && ins.sources.size() == 2 &&
          (integer(ins.sources[0]).has_value() != integer(ins.sources[1]).has_value());
  if (any_of(op, {"bra", "brx", "jmp", "jmx", "call", "ret", "exit", "bssy", "bsync", "bclear", "bmov", "warpsync"})) {
    t.branch = true;
    return t;
  }
  if (any_of(op, {"nop", "depbar", "membar", "yield"})) {
    t.wait = true;
    return t;
  }
  if (op == "bar") {
    t.barrier = true;
    return t;
  }
  if (op == "ld" || op == "st") {
    const bool load = op == "ld";
    if (part("shared")) {
      if (load) t.shared_load_bits = type_bits(parts);
      else t.shared_store = true;
    } else if (part("local")) {
      (load ? t.local_load : t.local_store) = true;
    } else if (load) {
      t.global_load_bits = type_bits(parts);
    }
    return t;
  }
  if (op == "ldsm") {  // ldmatrix: .x<n> matrices of 8x8 16-bit, 32 bits per lane each
    for (const std::string& p : parts)
      if (p.size() == 2 && p[0] == 'x' && std::isdigit(static_cast<unsigned char>(p[1]))) t.shared_load_bits = 32 * (p[1] - '0');
    return t;
  }
  if (op == "ldc") {
    t.scalar_load = true;
    return t;
  }
  if (any_of(op, {"tld", "tld4", "tex", "txd", "tmml", "suld"})) {  // texel and image loads
    t.global_load_bits = register_bits(ins.dests);
    return t;
  }
  if (any_of(op, {"atom", "atoms", "red", "sust", "suatom", "txq", "ald", "ast", "ipa", "out", "cctl", "ldsts"}))
    return t;
  bool uniform = !ins.dests.empty();
  for (const std::string& d : ins.dests) uniform = uniform && is_uniform(d);
  (uniform ? t.salu : t.valu) = true;
  return t;
}

// Operands without the zero register, constant-true/false predicates and null destinations.
bool dropped(const std::string& w) { return any_of(w, {"rZ", "urZ", "pT", "pF", "upT", "upF", "null"}); }

// The outcome of "p = isetp.<cmp>.<type> a b" on constants, if the compare is one of these.
std::optional<bool> compare(const std::string& mnemonic, long a, long b) {
  const std::vector<std::string> parts = parts_of(mnemonic);
  if (parts.size() < 3 || parts[0] != "isetp") return std::nullopt;
  const bool is_signed = parts[2] == "i32";
  const long x = is_signed ? long(int32_t(a)) : long(uint32_t(a)), y = is_signed ? long(int32_t(b)) : long(uint32_t(b));
  const std::string& c = parts[1];
  if (c == "lt") return x < y;
  if (c == "le") return x <= y;
  if (c == "gt") return x > y;
  if (c == "ge") return x >= y;
  if (c == "eq") return x == y;
  if (c == "ne") return x != y;
  return std::nullopt;
}

// NAK lowers a loop's `break` to a flag: the breaking block sets a register to a constant and joins the
// block that closes the loop, whose branch tests the register. That block leaves the loop whenever it
// is entered from the breaking block, so the breaking block is read as going where the test sends it:
// it is the loop's exit path, not part of every iteration.
void thread_flag_tests(std::vector<Instruction>& code, const std::vector<std::string>& guard) {
  std::map<int, std::pair<size_t, size_t>> blocks;  // block -> [label line, last line]
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i].label < 0) continue;
    size_t e = i + 1;
    while (e < code.size() && code[e].label < 0) ++e;
    blocks[code[i].label] = {i, e - 1};
  }
  for (auto& [number, range] : blocks) {
    Instruction& head = code[range.first];
    if (!head.successors || head.successors->size() != 1) continue;
    auto next = blocks.find(head.successors->front());
    if (next == blocks.end()) continue;
    const auto [s_first, s_last] = next->second;
    const Instruction& bra = code[s_last];
    const std::vector<int>& out = *code[s_first].successors;
    if (!starts(bra.mnemonic, "bra") || guard[s_last].size() < 2 || out.size() != 2 || bra.target < 0) continue;
    const bool negated = guard[s_last][1] == '!';
    const std::string pred = guard[s_last].substr(negated ? 2 : 1);
    // The test: the last write of the predicate in the joined block, reading a register it does not write.
    std::optional<bool> taken;
    for (size_t i = s_last; i-- > s_first + 1;) {
      const Instruction& t = code[i];
      if (std::find(t.dests.begin(), t.dests.end(), pred) == t.dests.end()) continue;
      if (!t.traits.compare || t.sources.size() != 2 || !integer(t.sources[1])) break;
      const std::string& flag = t.sources[0];
      bool written = false;
      for (size_t j = s_first + 1; j < i; ++j)
        written = written || std::find(code[j].dests.begin(), code[j].dests.end(), flag) != code[j].dests.end();
      if (written) break;
      // Its value: the breaking block's last write of it, a constant move.
      for (size_t j = range.second; j > range.first; --j) {
        const Instruction& m = code[j];
        if (std::find(m.dests.begin(), m.dests.end(), flag) == m.dests.end()) continue;
        if (m.mnemonic == "mov" && m.sources.size() == 1 && integer(m.sources[0]) && guard[j].empty())
          if (auto p = compare(t.mnemonic, *integer(m.sources[0]), *integer(t.sources[1]))) taken = *p != negated;
        break;
      }
      break;
    }
    if (!taken) continue;
    const int to = *taken ? bra.target : (out[0] == bra.target ? out[1] : out[0]);
    head.successors = std::vector<int>{to};
  }
}

}  // namespace

std::vector<Instruction> parse_nak(const std::string& text) {
  std::vector<Instruction> out;
  std::map<std::string, int> label_block;  // "L578" -> 439
  std::vector<std::pair<size_t, std::string>> branches;  // output index -> label named
  std::vector<std::string> guard;  // each output line's predicate ("@!p0"), or ""
  size_t open = std::string::npos;  // the current block's label line
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    const size_t comment = line.find("//");
    if (comment != std::string::npos) line = line.substr(0, comment);
    line = trim(line);
    if (line.empty()) continue;
    std::vector<std::string> w = words(line);
    if (starts(w[0], "block") && w.size() >= 3 && integer(w[1])) {
      Instruction label;
      label.label = int(*integer(w[1]));
      label.successors.emplace();
      label_block[w[2]] = label.label;
      open = out.size();
      out.push_back(std::move(label));
      guard.emplace_back();
      continue;
    }
    if (w[0] == "}") {
      const size_t b = line.find('['), e = line.rfind(']');
      if (open != std::string::npos && b != std::string::npos && e != std::string::npos) {
        std::stringstream list(line.substr(b + 1, e - b - 1));
        std::string item;
        while (std::getline(list, item, ','))
          if (auto n = integer(trim(item))) out[open].successors->push_back(int(*n));
      }
      continue;
    }
    Instruction ins;
    size_t at = 0;
    if (w[0][0] == '@') at = 1;  // the predicate guarding it
    const auto eq = std::find(w.begin() + at, w.end(), "=");
    if (eq != w.end()) {
      for (auto d = w.begin() + at; d != eq; ++d)
        if (!dropped(*d)) ins.dests.push_back(*d);
      at = size_t(eq - w.begin()) + 1;
    }
    if (at >= w.size() || !std::islower(static_cast<unsigned char>(w[at][0]))) continue;
    ins.mnemonic = w[at];
    for (size_t i = at + 1; i < w.size(); ++i) {
      ins.operands += (ins.operands.empty() ? "" : " ") + w[i];
      if (!dropped(w[i])) ins.sources.push_back(w[i]);
    }
    ins.traits = traits_of(ins);
    if (ins.traits.branch && !ins.sources.empty() && starts(ins.mnemonic, "bra"))
      branches.emplace_back(out.size(), ins.sources.back());
    out.push_back(std::move(ins));
    guard.push_back(w[0][0] == '@' ? w[0] : "");
  }
  for (const auto& [i, name] : branches) {
    auto it = label_block.find(name);
    if (it != label_block.end()) out[i].target = it->second;
  }
  thread_flag_tests(out, guard);
  return out;
}

}  // namespace gpu_report
