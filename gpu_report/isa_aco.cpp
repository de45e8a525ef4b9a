// AMD disassembly as RADV's ACO prints it: "BB<n>:" labels, "mnemonic op, op, ... ; encoding" lines.
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "isa_mix.hpp"

namespace gpu_report {

namespace {

using isa_text::integer;
using isa_text::trim;

using isa_text::starts;
bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

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

Traits traits_of(const std::string& m) {
  Traits t;
  t.fma = is_fma(m);
  t.fma_work = fma_work(m);
  t.matrix = is_matrix(m);
  t.matrix_work = matrix_work(m);
  t.branch = is_branch(m);
  t.wait = is_wait(m);
  t.barrier = starts(m, "s_barrier");
  t.scalar_load = is_scalar_load(m);
  t.valu = starts(m, "v_");
  t.salu = starts(m, "s_");
  t.shared_load_bits = shared_load_bits(m);
  t.global_load_bits = global_load_bits(m);
  t.shared_store = is_shared_store(m);
  t.local_load = starts(m, "scratch_load");
  t.local_store = starts(m, "scratch_store");
  t.compare = has(m, "cmp");
  t.add = starts(m, "v_add") || starts(m, "s_add");
  return t;
}

// Compares: their register and constant operands (v_cmp's destination among them: it is never stepped).
// Adds: the destination first (v_add_nc_u32 vD, c, vD; s_add_u32 sD, sD, c; v_add_co has a carry), and
// s_addk_i32 sD, c reads its destination.
void set_operands(Instruction& ins) {
  const std::vector<std::string> ops = split_operands(ins.operands);
  if (ins.traits.add && !ops.empty()) {
    ins.dests = {ops[0]};
    if (starts(ins.mnemonic, "s_addk")) ins.sources.push_back(ops[0]);
    ins.sources.insert(ins.sources.end(), ops.begin() + 1, ops.end());
    return;
  }
  for (const std::string& o : ops)
    if (is_register(o) || integer(o)) ins.sources.push_back(o);
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

std::vector<Instruction> parse_aco(const std::string& text) {
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
      if (n >= 0) {
        Instruction label;
        label.label = n;
        out.push_back(std::move(label));
      }
      continue;
    }
    if (!std::islower(static_cast<unsigned char>(line[0]))) continue;
    Instruction ins;
    const size_t sp = line.find_first_of(" \t");
    ins.mnemonic = line.substr(0, sp);
    ins.operands = sp == std::string::npos ? "" : trim(line.substr(sp));
    ins.traits = traits_of(ins.mnemonic);
    if (ins.traits.branch) {
      const std::vector<std::string> ops = split_operands(ins.operands);
      if (!ops.empty()) ins.target = label_number(ops[0]);
    }
    set_operands(ins);
    out.push_back(std::move(ins));
  }
  return out;
}

}  // namespace gpu_report
