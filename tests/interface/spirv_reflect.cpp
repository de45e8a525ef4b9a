// Reads the few instructions the interface test needs (SPIR-V 1.x, section 2.3 "Physical Layout"):
// names, decorations, pointer and image types, variables, functions and their calls.
#include "spirv_reflect.hpp"

#include <stdexcept>

namespace vkgmm::test {

namespace {

enum : uint32_t {
  kOpName = 5,
  kOpMemberName = 6,
  kOpTypeBool = 20,
  kOpTypeInt = 21,
  kOpTypeFloat = 22,
  kOpTypeVector = 23,
  kOpTypeImage = 25,
  kOpTypeSampledImage = 27,
  kOpTypeArray = 28,
  kOpTypeStruct = 30,
  kOpTypePointer = 32,
  kOpConstant = 43,
  kOpFunction = 54,
  kOpFunctionCall = 57,
  kOpVariable = 59,
  kOpDecorate = 71,
  kOpMemberDecorate = 72,
  kDecorationSpecId = 1,
  kDecorationNonWritable = 24,
  kDecorationBinding = 33,
  kDecorationDescriptorSet = 34,
  kDecorationOffset = 35,
  kStorageUniformConstant = 0,
  kStorageUniform = 2,
  kStorageWorkgroup = 4,
  kStoragePushConstant = 9,
  kStorageStorageBuffer = 12,
  kDimBuffer = 5,
};

// A literal string operand: nul-terminated UTF-8 packed into words.
std::string literal(const uint32_t* w, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i)
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((w[i] >> (8 * b)) & 0xff);
      if (c == 0) return s;
      s += c;
    }
  return s;
}

}  // namespace

Reflection reflect(const uint32_t* words, size_t count) {
  if (count < 5 || words[0] != 0x07230203u) throw std::runtime_error("not a SPIR-V module");
  std::map<uint32_t, std::string> names;
  std::map<std::pair<uint32_t, uint32_t>, std::string> member_names;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> member_offsets;
  std::map<uint32_t, uint32_t> spec_ids, binding_of, set_of;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> pointers;  // id -> (storage class, pointee)
  std::map<uint32_t, uint32_t> image_dim, sampled_image_of;
  struct Var {
    uint32_t id, pointer, storage;
  };
  std::vector<Var> vars;
  std::vector<uint32_t> functions;
  std::map<uint32_t, std::map<uint32_t, uint32_t>> calls;  // caller id -> callee id -> call sites
  std::map<uint32_t, uint32_t> scalar_bytes, constants;               // type id -> bytes; constant id -> value
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> vectors, arrays;  // (element type, count / length id)
  std::map<uint32_t, uint32_t> struct_members, read_only_members;     // struct id -> members; NonWritable ones
  std::set<uint32_t> read_only_vars;                                  // variables decorated NonWritable
  for (size_t i = 5; i < count;) {
    const uint32_t n = words[i] >> 16, op = words[i] & 0xffff;
    if (n == 0 || i + n > count) throw std::runtime_error("truncated instruction");
    const uint32_t* a = words + i + 1;  // operands
    switch (op) {
      case kOpName: names[a[0]] = literal(a + 1, n - 2); break;
      case kOpMemberName: member_names[{a[0], a[1]}] = literal(a + 2, n - 3); break;
      case kOpTypeBool: scalar_bytes[a[0]] = 4; break;
      case kOpTypeInt:
      case kOpTypeFloat: scalar_bytes[a[0]] = a[1] / 8; break;
      case kOpTypeVector: vectors[a[0]] = {a[1], a[2]}; break;
      case kOpTypeArray: arrays[a[0]] = {a[1], a[2]}; break;
      case kOpTypeStruct: struct_members[a[0]] = n - 2; break;
      case kOpConstant: constants[a[1]] = a[2]; break;
      case kOpTypeImage: image_dim[a[0]] = a[2]; break;
      case kOpTypeSampledImage: sampled_image_of[a[0]] = a[1]; break;
      case kOpTypePointer: pointers[a[0]] = {a[1], a[2]}; break;
      case kOpVariable: vars.push_back({a[1], a[0], a[2]}); break;
      case kOpFunction: functions.push_back(a[1]); break;
      case kOpFunctionCall:
        if (!functions.empty()) ++calls[functions.back()][a[2]];
        break;
      case kOpDecorate:
        if (a[1] == kDecorationSpecId) spec_ids[a[0]] = a[2];
        if (a[1] == kDecorationBinding) binding_of[a[0]] = a[2];
        if (a[1] == kDecorationDescriptorSet) set_of[a[0]] = a[2];
        if (a[1] == kDecorationNonWritable) read_only_vars.insert(a[0]);
        break;
      case kOpMemberDecorate:
        if (a[2] == kDecorationOffset) member_offsets[{a[0], a[1]}] = a[3];
        if (a[2] == kDecorationNonWritable) ++read_only_members[a[0]];
        break;
      default: break;
    }
    i += n;
  }
  Reflection r;
  for (const auto& [id, spec] : spec_ids) r.spec_constants[spec] = names.count(id) ? names[id] : "";
  auto name_of = [&](uint32_t f) {
    return names.count(f) ? names[f].substr(0, names[f].find('(')) : std::to_string(f);
  };
  for (const uint32_t f : functions)
    if (names.count(f)) r.functions.insert(name_of(f));
  for (const auto& [caller, callees] : calls)
    for (const auto& [callee, sites] : callees) r.calls[name_of(caller)][name_of(callee)] += sites;
  for (const Var& v : vars) {
    const auto [storage, pointee] = pointers.at(v.pointer);
    if (storage == kStorageWorkgroup) {
      SharedVariable sv;
      sv.name = names.count(v.id) ? names[v.id] : "";
      uint32_t type = pointee;
      if (arrays.count(type)) {
        const auto [element, length] = arrays[type];
        // A length that is no plain constant is a specialization constant or an operation on some.
        if (constants.count(length) && !spec_ids.count(length)) sv.length = constants[length];
        else sv.specialized = true, sv.length = 0;
        type = element;
      }
      if (vectors.count(type)) sv.element_bytes = scalar_bytes.count(vectors[type].first) ? scalar_bytes[vectors[type].first] * vectors[type].second : 0;
      else sv.element_bytes = scalar_bytes.count(type) ? scalar_bytes[type] : 0;
      r.shared.push_back(sv);
      continue;
    }
    if (storage == kStoragePushConstant) {
      for (uint32_t m = 0; member_offsets.count({pointee, m}); ++m)
        r.push_members.push_back({member_names[{pointee, m}], member_offsets[{pointee, m}]});
    }
    if (!binding_of.count(v.id)) continue;
    if (set_of[v.id] != 0) r.other_sets = true;
    BindingKind kind = BindingKind::other;
    if (storage == kStorageStorageBuffer || storage == kStorageUniform) kind = BindingKind::storage_buffer;
    if (storage == kStorageUniformConstant) {
      uint32_t image = sampled_image_of.count(pointee) ? sampled_image_of[pointee] : pointee;
      if (image_dim.count(image) && image_dim[image] == kDimBuffer) kind = BindingKind::texel_buffer;
    }
    // Aliased declarations of one binding (descriptor aliasing) must agree on the kind.
    const uint32_t b = binding_of[v.id];
    if (r.bindings.count(b) && r.bindings[b] != kind) kind = BindingKind::other;
    r.bindings[b] = kind;
    // A storage block is read-only where the variable or every member of its struct is NonWritable
    // (glslang's `readonly` decorates the members); one writable declaration makes the binding writable.
    const bool read_only = read_only_vars.count(v.id) ||
                           (struct_members.count(pointee) && read_only_members[pointee] == struct_members[pointee]);
    if (kind == BindingKind::storage_buffer && !read_only) r.writable.insert(b);
  }
  return r;
}

uint64_t inlined_copies(const Reflection& r, const std::string& function) {
  // Copies of a function = the sum over its call sites of its caller's copies; main has one. The call
  // graph is acyclic (GLSL has no recursion); memoized per function.
  std::map<std::string, uint64_t> memo;
  auto copies = [&](auto&& self, const std::string& f) -> uint64_t {
    if (f == "main") return 1;
    if (auto it = memo.find(f); it != memo.end()) return it->second;
    uint64_t n = 0;
    for (const auto& [caller, callees] : r.calls)
      if (auto it = callees.find(f); it != callees.end()) n += uint64_t(it->second) * self(self, caller);
    return memo[f] = n;
  };
  return copies(copies, function);
}

}  // namespace vkgmm::test
