// The host and the shaders agree on every constant id, push-constant field and binding: each embedded
// module, reflected from its SPIR-V, against what the host sets and lays out (host/interface.hpp,
// host/pipeline_cache.hpp). A shader that declares a constant the host does not know (or under another
// name), drops one the host sets, moves a push-constant field or binds something the layout lacks fails
// here, before any device runs it.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "context_impl.hpp"
#include "interface.hpp"
#include "shader_modules.hpp"
#include "spirv_reflect.hpp"

namespace vkgmm::test {
namespace {

template <size_t N, class Push>
std::vector<std::string> compare(const Reflection& r, bool op_module, const abi::SpecConstant (&constants)[N],
                                 bool split, const Push&, bool matrix = false, bool numbered = false) {
  std::vector<std::string> bad;
  std::map<uint32_t, const char*> host;
  if (op_module)
    for (const abi::SpecConstant& c : abi::kCommonConstants) host[c.id] = c.name;
  for (const abi::SpecConstant& c : constants) host[c.id] = c.name;
  // gmm's matrix builds take the matrices' shape and the subgroups' split.
  if (matrix)
    for (const abi::SpecConstant& c : abi::kMatrixConstants) host[c.id] = c.name;
  // The op modules' split builds take the part size; a helper module may bind the split layout without.
  if (split && op_module) host[abi::kSplitConstant.id] = abi::kSplitConstant.name;
  // The modules whose subgroups share memory number them through shaders/invocation.glsl: the ops' and
  // (`numbered`) the helpers that do.
  if (op_module || numbered) host[abi::kReverseSubgroupsConstant.id] = abi::kReverseSubgroupsConstant.name;
  for (const auto& [id, name] : r.spec_constants) {
    if (!host.count(id))
      bad.push_back("shader constant " + name + " (id " + std::to_string(id) + ") is unknown to the host");
    else if (host[id] && name != host[id])
      bad.push_back("constant id " + std::to_string(id) + " is " + name + " in the shader, " + host[id] + " on the host");
  }
  for (const auto& [id, name] : host)
    if (!r.spec_constants.count(id))
      bad.push_back("the host sets constant id " + std::to_string(id) + " (" + (name ? name : "local size") +
                    "), which the shader does not declare");
  const auto& fields = abi::PushLayout<Push>::fields;
  if (r.push_members.size() != std::size(fields))
    bad.push_back("push block: " + std::to_string(r.push_members.size()) + " members in the shader, " +
                  std::to_string(std::size(fields)) + " on the host");
  for (size_t i = 0; i < std::min(r.push_members.size(), std::size(fields)); ++i)
    if (r.push_members[i].name != fields[i].name || r.push_members[i].offset != fields[i].offset)
      bad.push_back("push member " + std::to_string(i) + ": " + r.push_members[i].name + " at " +
                    std::to_string(r.push_members[i].offset) + " in the shader, " + fields[i].name + " at " +
                    std::to_string(fields[i].offset) + " on the host");
  if (r.other_sets) bad.push_back("a binding outside descriptor set 0");
  for (const auto& [b, kind] : r.bindings) {
    if (!layout_has_binding(b, split)) {
      bad.push_back("binding " + std::to_string(b) + " is past the host's layout");
      continue;
    }
    const BindingKind want = binding_type(b, split) == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                 ? BindingKind::texel_buffer
                                 : BindingKind::storage_buffer;
    if (kind != want) bad.push_back("binding " + std::to_string(b) + " has another descriptor type than the host's");
  }
  return bad;
}

std::vector<std::string> compare_op(const Reflection& r, Op op, bool split, bool matrix = false) {
  std::vector<std::string> bad = op == Op::gmm ? compare(r, true, abi::kGmmConstants, split, abi::GmmPush{}, matrix)
                                               : compare(r, true, abi::kTgmmConstants, split, abi::TgmmPush{}, matrix);
  // The host gives a binding a dispatch leaves unused out's view or a read-only one by what the module
  // declares there (declares_writable): a writable binding the host takes for read-only would look
  // written to synchronization validation, in whatever buffer it was given.
  for (const auto& [b, kind] : r.bindings) {
    if (kind != BindingKind::storage_buffer) continue;
    const bool shader = r.writable.count(b) > 0;
    if (shader != declares_writable(op, b))
      bad.push_back("binding " + std::to_string(b) + " is " + (shader ? "writable" : "read-only") +
                    " in the shader, " + (shader ? "read-only" : "writable") + " on the host");
  }
  return bad;
}

Reflection reflect(const ShaderCode& c) { return test::reflect(c.code, c.words); }

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

TEST(Interface, EveryOpModuleMatchesTheHost) {
  const auto modules = embedded_op_modules();
  // Both ops in five builds each, gmm in three more with subgroup-summed K slices, and both in their
  // matrix builds: NV always, KHR where the compiler emits it; gmm's every build twice, for element types
  // and block formats.
  size_t matrix = 0, blocks = 0;
  for (const EmbeddedModule& m : modules) matrix += m.matrix, blocks += m.blocks;
  EXPECT_EQ(modules.size() - matrix, 13u + 8u);
  EXPECT_TRUE(matrix == 3u || matrix == 6u) << matrix;
  EXPECT_EQ(blocks, 8u + matrix / 3);
  for (const EmbeddedModule& m : modules) {
    const Reflection r = reflect(m.code);
    EXPECT_FALSE(r.push_members.empty()) << m.name;
    EXPECT_TRUE(r.bindings.count(VKGMM_BINDING_META)) << m.name;
    const auto bad = compare_op(r, m.op, m.split, m.matrix);
    EXPECT_TRUE(bad.empty()) << m.name << ":" << joined(bad);
  }
}

// Block decoding is compiled into gmm's block-format builds only: a driver inlines every call before it
// specializes the types, so an element type's pipeline carrying the decoder would compile it at every load
// and then drop it. The names are glslang's debug names of quant.glsl's functions.
TEST(Interface, OnlyTheBlockBuildsDecodeBlocks) {
  size_t block_builds = 0;
  for (const EmbeddedModule& m : embedded_op_modules()) {
    const Reflection r = reflect(m.code);
    ASSERT_FALSE(r.functions.empty()) << m.name << ": no function names to check";
    EXPECT_TRUE(r.functions.count("main")) << m.name;
    EXPECT_EQ(r.functions.count("dequant4") == 1, m.blocks) << m.name;
    EXPECT_EQ(r.functions.count("q_step_walk") == 1, m.blocks) << m.name;
    EXPECT_EQ(r.functions.count("q_raw4") == 1, m.blocks) << m.name;
    EXPECT_TRUE(!m.blocks || m.op == Op::gmm) << m.name;
    block_builds += m.blocks;
  }
  EXPECT_GE(block_builds, 9u);
}

// A block format's decoder is most of a block build's code, and drivers inline every call of it before they
// drop the calls the specialization rules out (Mesa's SPIR-V reader prunes no branch on a constant): a
// pipeline's creation grows with the decoder's copies. The FMA builds: main's two calls of run_visit
// (per-visit grid; persistent grid, whose loop also walks a token's slots routed in the kernel), each with the shared stage's three loads of a step (one call for both
// rhs layouts: the first step's and the staged loop's two, one per buffer), the block walk's two loop
// shapes and the direct schedule's scalar loads; the matrix builds' loop, one stage_step call per iteration
// whatever its buffers. More
// copies than these cost every block-format pipeline's creation (lavapipe: ~0.02 s each). The reader names
// functions up to glslang's "(", so overloads would merge: a count too high, never too low.
TEST(Interface, BlockBuildsInlineTheDecoderAtFewPlaces) {
  size_t checked = 0;
  for (const EmbeddedModule& m : embedded_op_modules()) {
    if (!m.blocks) continue;
    const Reflection r = reflect(m.code);
    EXPECT_LE(inlined_copies(r, "dequant4"), m.matrix ? 4u : 12u) << m.name;
    EXPECT_LE(inlined_copies(r, "q_step_walk"), m.matrix ? 0u : 2u) << m.name;
    EXPECT_LE(inlined_copies(r, "q_raw4"), m.matrix ? 4u : 16u) << m.name;
    EXPECT_GE(inlined_copies(r, "dequant4"), 1u) << m.name << ": the decoder is never called";
    ++checked;
  }
  EXPECT_GE(checked, 9u);
}

// The reader counts a function's copies as inlining makes them: one per call path from main.
TEST(Interface, InlinedCopiesFollowEveryCallPath) {
  Reflection r;
  r.calls["main"] = {{"a", 2}, {"b", 1}};
  r.calls["a"] = {{"c", 3}};
  r.calls["b"] = {{"c", 1}, {"a", 1}};
  EXPECT_EQ(inlined_copies(r, "main"), 1u);
  EXPECT_EQ(inlined_copies(r, "a"), 3u);   // main twice, b once
  EXPECT_EQ(inlined_copies(r, "c"), 10u);  // 3 per copy of a, 1 per copy of b
  EXPECT_EQ(inlined_copies(r, "d"), 0u);
}

// The matrix builds' shared variables each take a multiple of 16 bytes: cooperative-matrix loads and
// stores need 16-byte-aligned addresses (VUID-RuntimeSpirv-OpCooperativeMatrixLoadKHR-08986), and a
// driver places shared variables in an order of its own, so a variable of 4 bytes before the stage could
// shift it. Of the arrays whose lengths specialization constants set, only the element size is checked
// here (2 or 4 bytes): their lengths are the host's, the stage's a multiple of 8 halves
// (make_matrix_shape) and the accumulators' whole matrices.
TEST(Interface, MatrixBuildsKeepSharedMemory16ByteAligned) {
  size_t checked = 0;
  for (const EmbeddedModule& m : embedded_op_modules()) {
    if (!m.matrix) continue;
    ++checked;
    const Reflection r = reflect(m.code);
    EXPECT_FALSE(r.shared.empty()) << m.name;
    for (const SharedVariable& v : r.shared) {
      SCOPED_TRACE(std::string(m.name) + ": shared " + v.name);
      ASSERT_GT(v.element_bytes, 0u);
      if (v.specialized) EXPECT_TRUE(v.element_bytes == 2 || v.element_bytes == 4) << v.element_bytes;
      else EXPECT_EQ(v.element_bytes * v.length % 16, 0u) << v.element_bytes << " x " << v.length << " bytes";
    }
  }
  EXPECT_GE(checked, 2u);
}

TEST(Interface, CeilingModuleMatchesTheHost) {
  const auto bad = compare(reflect(fma_ceiling_shader()), false, abi::kCeilingConstants, false, abi::CeilingPush{});
  EXPECT_TRUE(bad.empty()) << joined(bad);
}

// The read-bandwidth probe's four builds: its push block and workgroup size as the host sets them, the
// texel view declared by the texel builds only, one word per workgroup to OUT.
TEST(Interface, ReadCeilingModulesMatchTheHost) {
  for (const bool texel : {false, true})
    for (const bool subgroup : {false, true}) {
      const Reflection r = reflect(read_ceiling_shader(texel, subgroup));
      const auto bad = compare(r, false, abi::kReadConstants, false, abi::ReadPush{});
      EXPECT_TRUE(bad.empty()) << "texel " << texel << ", subgroup " << subgroup << ":" << joined(bad);
      EXPECT_EQ(r.bindings.count(VKGMM_BINDING_LHS_TEXEL) == 1, texel);
      EXPECT_TRUE(r.bindings.count(VKGMM_BINDING_OUT));
    }
}

TEST(Interface, MetadataModuleMatchesTheHost) {
  const Reflection r = reflect(metadata_shader());
  const auto bad = compare(r, false, abi::kMetadataConstants, false, abi::MetadataPush{}, false, true);
  EXPECT_TRUE(bad.empty()) << joined(bad);
  // sizes (or ids), weights, workspace, status, and a given routing's words
  EXPECT_EQ(r.bindings.size(), 5u);
  EXPECT_EQ(r.bindings.count(VKGMM_BINDING_META_GIVEN), 1u);
}

TEST(Interface, CombineModuleMatchesTheHost) {
  const Reflection r = reflect(combine_shader());
  const auto bad = compare(r, false, abi::kCombineConstants, false, abi::CombinePush{});
  EXPECT_TRUE(bad.empty()) << joined(bad);
  EXPECT_TRUE(r.bindings.count(VKGMM_BINDING_LHS) && r.bindings.count(VKGMM_BINDING_OUT) &&
              r.bindings.count(VKGMM_BINDING_EXISTING));
}

TEST(Interface, TopKModuleMatchesTheHost) {
  const Reflection r = reflect(topk_shader());
  const auto bad = compare(r, false, abi::kTopKConstants, false, abi::TopKPush{});
  EXPECT_TRUE(bad.empty()) << joined(bad);
  // logits, ids, weights
  EXPECT_EQ(r.bindings.size(), 3u);
  EXPECT_TRUE(r.bindings.count(VKGMM_BINDING_LHS) && r.bindings.count(VKGMM_BINDING_OUT) &&
              r.bindings.count(VKGMM_BINDING_RHS));
}

TEST(Interface, TopKGradModuleMatchesTheHost) {
  const Reflection r = reflect(topk_grad_shader());
  const auto bad = compare(r, false, abi::kTopKGradConstants, false, abi::TopKGradPush{});
  EXPECT_TRUE(bad.empty()) << joined(bad);
  // logits, ids, weights, d_weights, d_logits
  EXPECT_EQ(r.bindings.size(), 5u);
  for (const uint32_t b : {VKGMM_BINDING_TOPK_GRAD_LOGITS, VKGMM_BINDING_TOPK_GRAD_IDS, VKGMM_BINDING_TOPK_GRAD_WEIGHTS,
                           VKGMM_BINDING_TOPK_GRAD_D_WEIGHTS, VKGMM_BINDING_TOPK_GRAD_D_LOGITS})
    EXPECT_TRUE(r.bindings.count(b)) << "binding " << b;
}

TEST(Interface, RoutedGradModuleMatchesTheHost) {
  const Reflection r = reflect(routed_grad_shader());
  const auto bad = compare(r, false, abi::kGradConstants, true, abi::GradPush{}, false, true);
  EXPECT_TRUE(bad.empty()) << joined(bad);
  // lhs, d_out, the gradient area's small words, weights, the routing words, d_weights, and past the
  // plain layout's storage bindings (storage buffers only in the split layout) the pre-activation and the
  // area's three large regions.
  EXPECT_EQ(r.bindings.size(), 10u);
  for (const uint32_t b : {VKGMM_BINDING_GRAD_PRE, VKGMM_BINDING_GRAD_D_H, VKGMM_BINDING_GRAD_SORTED,
                           VKGMM_BINDING_GRAD_GATHERED})
    EXPECT_TRUE(r.bindings.count(b)) << "binding " << b;
}

// The texel builds declare the texel bindings; the split builds the parts; the plain ones neither.
TEST(Interface, EachBuildDeclaresItsBindings) {
  for (const EmbeddedModule& m : embedded_op_modules()) {
    const Reflection r = reflect(m.code);
    const bool texel = std::string(m.name).find("texel") != std::string::npos;
    const bool texel_bound = r.bindings.count(VKGMM_BINDING_LHS_TEXEL) &&
                             r.bindings.at(VKGMM_BINDING_LHS_TEXEL) == BindingKind::texel_buffer;
    EXPECT_EQ(texel_bound, texel && !m.split) << m.name;
    EXPECT_EQ(r.bindings.count(VKGMM_NUM_SPLIT_BINDINGS - 1) == 1, m.split) << m.name;
  }
}

// The check itself can fail: a module whose VEC4 constant moved to another id, whose push block lost a
// field's offset, and whose read-only blocks lost their NonWritable, is reported on each count.
TEST(Interface, ADriftedModuleIsCaught) {
  const ShaderCode gmm = embedded_op_modules().front().code;
  std::vector<uint32_t> words(gmm.code, gmm.code + gmm.words);
  bool moved_constant = false, moved_field = false;
  for (size_t i = 5; i < words.size(); i += words[i] >> 16) {
    const uint32_t op = words[i] & 0xffff, n = words[i] >> 16;
    // NonWritable (on the block's members and on its variable, as glslang writes `readonly`) -> RelaxedPrecision
    if (op == 72 && n == 4 && words[i + 3] == 24) words[i + 3] = 0;
    if (op == 71 && n == 3 && words[i + 2] == 24) words[i + 2] = 0;
    if (op == 71 && n == 4 && words[i + 2] == 1 && words[i + 3] == VKGMM_ID_VEC4 && !moved_constant)
      words[i + 3] = 99, moved_constant = true;  // OpDecorate SpecId (an id no module declares)
    if (op == 72 && n == 5 && words[i + 3] == 35 && words[i + 4] == 4 * VKGMM_PUSH_OPERAND_WORDS && !moved_field)
      words[i + 4] += 4, moved_field = true;  // OpMemberDecorate Offset of the first op field
  }
  ASSERT_TRUE(moved_constant && moved_field);
  const std::string bad = joined(compare_op(test::reflect(words.data(), words.size()), Op::gmm, false));
  EXPECT_NE(bad.find("id 99) is unknown"), std::string::npos) << bad;
  EXPECT_NE(bad.find("VEC4), which the shader does not declare"), std::string::npos) << bad;
  const std::string first = "push member " + std::to_string(VKGMM_PUSH_OPERAND_WORDS) + ": m at " +
                            std::to_string(4 * VKGMM_PUSH_OPERAND_WORDS + 4);
  EXPECT_NE(bad.find(first), std::string::npos) << bad;
  EXPECT_NE(bad.find("binding " + std::to_string(VKGMM_BINDING_META) + " is writable in the shader, read-only on the host"),
            std::string::npos) << bad;
}

TEST(Interface, NotSpirvIsRefused) {
  const uint32_t junk[6] = {1, 2, 3, 4, 5, 6};
  EXPECT_THROW(test::reflect(junk, 6), std::runtime_error);
}

}  // namespace
}  // namespace vkgmm::test
