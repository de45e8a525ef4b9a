// Intel GEN assembly as ANV prints it (brw's disassembler):
//   LABEL158:
//   cmp.ge.f0.0(8)  null<1>D  g1<8,8,1>D  g3.6<0,1,0>D  { align1 1Q I@2 };
//   (+f0.0) break(8) JIP:  LABEL156  UIP:  LABEL156  { align1 1Q };
//   send(8)  g12UD  g40UD  nullUD  0x04405500  0x00000000
//                ugm MsgDesc: ( load, a32, d32, V4, L1STATE_L3MOCS dst_len = 4, src0_len = 1 bti )  ...
//   while(8)  JIP:  LABEL158  { align1 1Q };
// A send's message is the indented line after it.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "isa_mix.hpp"

namespace gpu_report {

namespace {

using isa_text::integer;
using isa_text::trim;
using isa_text::words;

using isa_text::starts;

bool any_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

// "LABEL146" -> 146, else -1.
int label_number(const std::string& s) {
  if (!starts(s, "LABEL") || s.size() == 5) return -1;
  for (size_t i = 5; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
  return std::atoi(s.c_str() + 5);
}

// The type suffix of an operand ("g75<1,1,0>D": "D", "g53UD": "UD", "128D": "D").
std::string type_of(const std::string& w) {
  size_t e = w.size();
  while (e > 0 && std::isupper(static_cast<unsigned char>(w[e - 1]))) --e;
  return w.substr(e);
}

bool is_float_type(const std::string& t) { return any_of(t, {"F", "HF", "DF", "BF"}); }

int type_bits(const std::string& t) {
  if (any_of(t, {"B", "UB"})) return 8;
  if (any_of(t, {"W", "UW", "HF", "BF"})) return 16;
  if (any_of(t, {"Q", "UQ", "DF"})) return 64;
  return 32;
}

// An operand as a register name or an integer: "g75<8,8,1>D" -> "g75", "g3.6<0,1,0>UD" -> "g3",
// "-g4<1,1,0>F" -> "g4", "128D" -> "128", "0x00000080UD" -> "0x00000080", "-1D" -> "-1"; "" for null.
std::string normalized(std::string w) {
  if (starts(w, "(abs)")) w = w.substr(5);
  const bool number = !w.empty() && (std::isdigit(static_cast<unsigned char>(w[0])) ||
                                     (w[0] == '-' && w.size() > 1 && std::isdigit(static_cast<unsigned char>(w[1]))));
  if (!number && !w.empty() && (w[0] == '-' || w[0] == '~')) w = w.substr(1);
  w = w.substr(0, w.find('<'));
  w = w.substr(0, w.size() - type_of(w).size());
  if (!number) w = w.substr(0, w.find('.'));
  return w == "null" ? "" : w;
}

// One line of code before classification.
struct Raw {
  Instruction ins;
  std::string dest_type, src_types[3];
  int exec = 1;
  bool we_all = false;
  std::string message;  // a send's message line
};

bool is_send(const std::string& op) { return any_of(op, {"send", "sendc", "sends", "sendsc"}); }

// A send by its message: "ugm MsgDesc: ( load, a32, d32, V4, ... bti )".
void classify_send(const Raw& r, Traits& t) {
  const std::string& m = r.message;
  const std::vector<std::string> w = words(m);
  if (w.empty()) return;
  const std::string& sfid = w[0];
  if (sfid == "gateway") {
    t.barrier = m.find("barrier") != std::string::npos;
    return;
  }
  if (m.find("scratch") != std::string::npos) {  // pre-LSC scratch block messages
    (m.find("write") != std::string::npos ? t.local_store : t.local_load) = true;
    return;
  }
  if (sfid == "const") {
    t.scalar_load = true;
    return;
  }
  const size_t open = m.find('('), close = m.find(')', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return;
  std::string inside = m.substr(open + 1, close - open - 1);
  std::replace(inside.begin(), inside.end(), ',', ' ');
  const std::vector<std::string> f = words(inside);
  if (f.empty()) return;
  const std::string& op = f[0];
  const bool scratch = std::find(f.begin(), f.end(), "ss") != f.end();
  const bool transpose = std::find(f.begin(), f.end(), "transpose") != f.end();
  int bits = 32, vector = 1, channels = 0;
  for (const std::string& x : f) {
    if (x.size() >= 2 && x[0] == 'd' && std::isdigit(static_cast<unsigned char>(x[1]))) bits = std::atoi(x.c_str() + 1);
    if (x.size() >= 2 && x[0] == 'V' && std::isdigit(static_cast<unsigned char>(x[1]))) vector = std::atoi(x.c_str() + 1);
    if (!x.empty() && x.find_first_not_of("xyzw") == std::string::npos) channels = int(x.size());
  }
  if (op == "fence") {
    t.wait = true;
    return;
  }
  const bool load = starts(op, "load"), store = starts(op, "store");
  if (sfid == "slm") {
    if (load) t.shared_load_bits = bits * vector;
    t.shared_store = store;
    return;
  }
  if (sfid != "ugm" && sfid != "tgm") return;
  if (scratch) {
    t.local_load = load;
    t.local_store = store;
  } else if (load && transpose) {
    t.scalar_load = true;
  } else if (load) {
    t.global_load_bits = bits * (channels > 0 ? channels : vector);
  }
}

Traits traits_of(const Raw& r, int dispatch) {
  Traits t;
  const std::string& m = r.ins.mnemonic;
  const std::string op = m.substr(0, m.find('.'));
  if (op == "mad" && is_float_type(r.dest_type)) t.fma = true, t.fma_work = std::max(1, r.exec / dispatch);
  if (op == "dp4a") t.fma = true, t.fma_work = 4 * std::max(1, r.exec / dispatch);
  if (op == "dpas" || op == "dpasw") {
    // dpas.<systolic depth>x<repeat count>: per channel and step, 32 bits of the B source's elements.
    int depth = 0, repeat = 0;
    t.matrix = true;
    if (std::sscanf(m.c_str() + op.size(), ".%dx%d", &depth, &repeat) == 2) {
      const std::string& b = r.src_types[1].empty() ? r.src_types[2] : r.src_types[1];
      t.matrix_work = double(r.exec) * repeat * depth * (32 / type_bits(b));
    }
  }
  t.compare = op == "cmp" || op == "cmpn";
  t.add = op == "add" && !is_float_type(r.dest_type) && r.ins.sources.size() == 2;
  if (any_of(op, {"if", "else", "endif", "while", "break", "cont", "halt", "jmpi", "call", "calla", "ret", "brc", "brd",
                  "goto", "join", "do"})) {
    t.branch = true;
  } else if (any_of(op, {"sync", "nop", "wait"})) {
    t.wait = true;
  } else if (op == "barrier") {
    t.barrier = true;
  } else if (is_send(op)) {
    classify_send(r, t);
  } else if (r.we_all && r.exec < dispatch) {
    t.salu = true;
  } else {
    t.valu = true;
  }
  return t;
}

// One instruction line: "[(pred)] op[.mods](exec) dst src... {options};" ("sync nop(1)", "math inv(8)":
// the function follows the opcode).
bool parse_line(const std::string& text, Raw& r) {
  std::string line = text;
  for (size_t c = line.find("/*"); c != std::string::npos; c = line.find("/*"))  // "0x3f800000F /* 1F */"
    line.erase(c, line.find("*/", c) == std::string::npos ? std::string::npos : line.find("*/", c) + 2 - c);
  const size_t brace = line.find('{');
  const std::string options = brace == std::string::npos ? "" : line.substr(brace);
  line = line.substr(0, brace);
  if (!line.empty() && line[0] == '(') line = line.substr(std::min(line.size(), line.find(')') + 1));
  std::vector<std::string> w = words(line);
  // Indirect operands ("g[a0 192]<0,1,0>UD") hold a space.
  for (size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i].find('[') != std::string::npos && w[i].find(']') == std::string::npos) w[i] += w[i + 1], w.erase(w.begin() + long(i) + 1);
  if (w.empty() || !std::islower(static_cast<unsigned char>(w[0][0]))) return false;
  size_t at = 0;
  if (w[0].find('(') == std::string::npos) {
    if (w.size() < 2 || w[1].find('(') == std::string::npos) return false;
    w[1] = w[0] + "." + w[1];
    at = 1;
  }
  const size_t paren = w[at].find('(');
  r.ins.mnemonic = w[at].substr(0, paren);
  r.exec = std::max(1, std::atoi(w[at].c_str() + paren + 1));
  r.we_all = options.find("WE_all") != std::string::npos;
  std::vector<std::string> ops(w.begin() + long(at) + 1, w.end());
  for (const std::string& o : ops) r.ins.operands += (r.ins.operands.empty() ? "" : " ") + o;
  const std::string op = r.ins.mnemonic.substr(0, r.ins.mnemonic.find('.'));
  if (std::find(ops.begin(), ops.end(), "JIP:") != ops.end()) {  // control flow: its jump target
    auto jip = std::find(ops.begin(), ops.end(), "JIP:");
    if (jip + 1 != ops.end()) r.ins.target = label_number(*(jip + 1));
    return true;
  }
  if (ops.empty()) return true;
  r.dest_type = type_of(ops[0]);
  if (!normalized(ops[0]).empty()) r.ins.dests.push_back(normalized(ops[0]));
  // A send's sources are its payloads; the descriptors after them are not values.
  const size_t n = is_send(op) ? std::min<size_t>(ops.size(), 3) : ops.size();
  for (size_t i = 1; i < n; ++i) {
    if (i <= 3) r.src_types[i - 1] = type_of(ops[i]);
    if (!normalized(ops[i]).empty()) r.ins.sources.push_back(normalized(ops[i]));
  }
  return true;
}

}  // namespace

std::vector<Instruction> parse_intel(const std::string& text) {
  std::vector<Raw> raw;
  std::stringstream ss(text);
  std::string line;
  bool after_send = false;
  while (std::getline(ss, line)) {
    const bool indented = !line.empty() && std::isspace(static_cast<unsigned char>(line[0]));
    const std::string t = trim(line);
    if (t.empty()) continue;
    if (indented) {
      if (after_send) raw.back().message = t, raw.back().ins.operands += "  " + t;
      after_send = false;
      continue;
    }
    after_send = false;
    if (t.back() == ':' && label_number(t.substr(0, t.size() - 1)) >= 0) {
      Raw label;
      label.ins.label = label_number(t.substr(0, t.size() - 1));
      raw.push_back(std::move(label));
      continue;
    }
    Raw r;
    if (!parse_line(t, r)) continue;
    after_send = is_send(r.ins.mnemonic.substr(0, r.ins.mnemonic.find('.')));
    raw.push_back(std::move(r));
  }
  // The dispatch width (SIMD8, 16 or 32): the most common execution size of per-invocation instructions.
  std::map<int, int> widths;
  for (const Raw& r : raw)
    if (r.ins.label < 0 && !r.we_all) ++widths[r.exec];
  int dispatch = 8;
  int most = 0;
  for (const auto& [exec, n] : widths)
    if (n > most) dispatch = exec, most = n;
  std::vector<Instruction> out;
  out.reserve(raw.size());
  for (Raw& r : raw) {
    if (r.ins.label < 0) r.ins.traits = traits_of(r, dispatch);
    out.push_back(std::move(r.ins));
  }
  return out;
}

}  // namespace gpu_report
