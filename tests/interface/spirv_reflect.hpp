// A small SPIR-V reader for the interface test: what a compute module declares to the host (its
// specialization constants, its push-constant block and its descriptor bindings), read from the words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace vkgmm::test {

struct ReflectedMember {
  std::string name;
  uint32_t offset = 0;
};

enum class BindingKind { storage_buffer, texel_buffer, other };

// A shared (Workgroup) variable: its element's bytes and its length; a length set by a specialization
// constant, or computed from some, is 0 with `specialized` set.
struct SharedVariable {
  std::string name;
  uint32_t element_bytes = 0;  // bool counted as 4 (its size is the driver's), 0 for a type not read here
  uint64_t length = 1;
  bool specialized = false;
};

struct Reflection {
  std::map<uint32_t, std::string> spec_constants;  // SpecId -> the constant's name ("" when unnamed)
  std::vector<ReflectedMember> push_members;        // the push-constant block's members, in order
  std::map<uint32_t, BindingKind> bindings;         // set-0 binding -> what is declared there
  std::set<uint32_t> writable;                      // the storage bindings some declaration may write
  bool other_sets = false;                          // some variable is in a set other than 0
  std::vector<SharedVariable> shared;               // the Workgroup variables, in declaration order
  std::set<std::string> functions;                  // each function's name, up to the "(" glslang adds
  // Per function (named as above), its calls: callee -> call sites.
  std::map<std::string, std::map<std::string, uint32_t>> calls;
};

// Throws std::runtime_error on words that are not a SPIR-V module.
Reflection reflect(const uint32_t* words, size_t count);

// The copies of `function` that inlining every call into main makes: drivers inline all calls before they
// drop what the specialization constants rule out, so each copy is compiled at least that far.
uint64_t inlined_copies(const Reflection& r, const std::string& function);

}  // namespace vkgmm::test
