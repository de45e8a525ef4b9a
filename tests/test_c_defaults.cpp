// The C API's defaults are the C++ API's: a zero C problem (struct_size, sizes and group sizes set) turns
// into the default C++ problem, and plans made from each on the same device agree. And the growing-struct
// rules (vkgmm.h, "Growing structs") on a struct that has grown by one field.
#include <cstddef>
#include <cstring>
#include <functional>
#include <iterator>
#include <utility>

#include "c_api/c_api.hpp"
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

constexpr int32_t kSizes[] = {3, 0, 5, 2};
constexpr int64_t kGroups = 4;

// A C problem (vkgmm_gmm_problem, vkgmm_tgmm_problem) with only what has no default set.
template <typename C>
C default_c() {
  C c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.m = 12;
  c.k = 7;
  c.n = 5;
  c.group_sizes = kSizes;
  c.num_groups = kGroups;
  return c;
}

// The same C++ problem (GmmProblem, TgmmProblem).
template <typename P>
P default_cpp() {
  P p;
  p.m = 12;
  p.k = 7;
  p.n = 5;
  p.group_sizes.assign(kSizes, kSizes + kGroups);
  return p;
}

// The fields GmmProblem and TgmmProblem share.
template <typename P>
void expect_same_common_fields(const P& c, const P& p) {
  EXPECT_EQ(c.m, p.m);
  EXPECT_EQ(c.k, p.k);
  EXPECT_EQ(c.n, p.n);
  EXPECT_EQ(c.group_sizes, p.group_sizes);
  EXPECT_EQ(c.device_group_sizes.count, p.device_group_sizes.count);
  EXPECT_EQ(c.device_group_sizes.expected_rows, p.device_group_sizes.expected_rows);
  EXPECT_EQ(c.group_offset, p.group_offset);
  EXPECT_EQ(c.lhs_type, p.lhs_type);
  EXPECT_EQ(c.rhs_type, p.rhs_type);
  EXPECT_EQ(c.out_type, p.out_type);
  EXPECT_EQ(c.existing_out, p.existing_out);
  EXPECT_EQ(c.tiling.fixed, p.tiling.fixed);
  EXPECT_EQ(bool(c.tiling.lookup), bool(p.tiling.lookup));
  EXPECT_EQ(c.schedule, p.schedule);
}

void expect_same_routing(const GmmProblem& c, const GmmProblem& p) {
  EXPECT_EQ(c.routing.top_k, p.routing.top_k);
  EXPECT_EQ(c.routing.lhs_per_slot, p.routing.lhs_per_slot);
  EXPECT_EQ(c.routing.combine, p.routing.combine);
  EXPECT_EQ(c.routing.num_experts, p.routing.num_experts);
  EXPECT_EQ(c.epilogue.bias, p.epilogue.bias);
  EXPECT_EQ(c.epilogue.activation, p.epilogue.activation);
}

TEST(CDefaults, GmmProblemIsTheCppDefault) {
  const GmmProblem c = c_api::to_cpp(default_c<vkgmm_gmm_problem>()), p = default_cpp<GmmProblem>();
  expect_same_common_fields(c, p);
  EXPECT_EQ(c.num_rhs_groups, p.num_rhs_groups);  // C's 0 is C++'s -1: G - group_offset
  EXPECT_EQ(c.transpose_rhs, p.transpose_rhs);
  expect_same_routing(c, p);  // no routing, no epilogue
}

// The C element types and block formats are the C++ DType values, and each reaches the C++ problem as
// itself (the block formats too: which operand may have them is the plan's rule, not the conversion's).
TEST(CDefaults, DtypesAreTheCppOnes) {
  EXPECT_EQ(int(VKGMM_F32), 0);
  EXPECT_EQ(int(VKGMM_F16), 1);
  EXPECT_EQ(int(VKGMM_BF16), 2);
  EXPECT_EQ(int(VKGMM_Q8_0), 3);
  EXPECT_EQ(int(VKGMM_Q4_0), 4);
  EXPECT_EQ(int(VKGMM_Q4_K), 5);
  EXPECT_EQ(int(VKGMM_Q6_K), 6);
  EXPECT_EQ(int(VKGMM_MXFP4), 7);
  EXPECT_EQ(int(VKGMM_Q4_1), 8);
  EXPECT_EQ(int(VKGMM_Q5_0), 9);
  EXPECT_EQ(int(VKGMM_Q5_1), 10);
  EXPECT_EQ(int(VKGMM_IQ4_NL), 11);
  EXPECT_EQ(int(VKGMM_Q5_K), 12);
  EXPECT_EQ(int(VKGMM_IQ4_XS), 13);
  EXPECT_EQ(int(VKGMM_Q2_K), 14);
  EXPECT_EQ(int(VKGMM_Q3_K), 15);
  const std::pair<vkgmm_dtype, DType> pairs[] = {
      {VKGMM_F32, DType::f32},   {VKGMM_F16, DType::f16},   {VKGMM_BF16, DType::bf16}, {VKGMM_Q8_0, DType::q8_0},
      {VKGMM_Q4_0, DType::q4_0}, {VKGMM_Q4_K, DType::q4_K}, {VKGMM_Q6_K, DType::q6_K}, {VKGMM_MXFP4, DType::mxfp4},
      {VKGMM_Q4_1, DType::q4_1}, {VKGMM_Q5_0, DType::q5_0}, {VKGMM_Q5_1, DType::q5_1}, {VKGMM_IQ4_NL, DType::iq4_nl},
      {VKGMM_Q5_K, DType::q5_K}, {VKGMM_IQ4_XS, DType::iq4_xs}, {VKGMM_Q2_K, DType::q2_K},
      {VKGMM_Q3_K, DType::q3_K}};
  for (const auto& [c, cpp] : pairs) {
    auto g = default_c<vkgmm_gmm_problem>();
    g.rhs_type = c;
    EXPECT_EQ(c_api::to_cpp(g).rhs_type, cpp) << dtype_name(cpp);
  }
  auto g = default_c<vkgmm_gmm_problem>();
  g.rhs_type = static_cast<vkgmm_dtype>(int(VKGMM_Q3_K) + 1);  // one past the last
  EXPECT_THROW(c_api::to_cpp(g), Error);
}

// Routing by expert ids and the epilogue: each C field reaches its C++ field.
TEST(CDefaults, RoutingAndEpilogueAreTheCppOnes) {
  auto c = default_c<vkgmm_gmm_problem>();
  c.group_sizes = nullptr;
  c.num_groups = 0;
  c.num_rhs_groups = 3;
  c.group_offset = 2;
  c.top_k = 2;
  c.lhs_per_slot = 1;
  c.combine = 1;
  c.num_experts = 8;
  c.bias = 1;
  c.activation = VKGMM_ACTIVATION_SWIGLU;
  auto p = default_cpp<GmmProblem>();
  p.group_sizes.clear();
  p.num_rhs_groups = 3;
  p.group_offset = 2;
  p.routing = {2, true, true, 8};
  p.epilogue = {true, Activation::swiglu};
  const GmmProblem got = c_api::to_cpp(c);
  expect_same_common_fields(got, p);
  EXPECT_EQ(got.num_rhs_groups, 3);
  expect_same_routing(got, p);
  // One at a time: each flag on its own, and the epilogue with group sizes (no routing).
  c.lhs_per_slot = 0;
  EXPECT_FALSE(c_api::to_cpp(c).routing.lhs_per_slot);
  EXPECT_TRUE(c_api::to_cpp(c).routing.combine);
  c.combine = 0;
  c.num_experts = 0;
  EXPECT_EQ(c_api::to_cpp(c).routing.num_experts, 0);
  EXPECT_FALSE(c_api::to_cpp(c).routing.combine);
  auto e = default_c<vkgmm_gmm_problem>();
  e.activation = VKGMM_ACTIVATION_SWIGLU;
  EXPECT_EQ(c_api::to_cpp(e).epilogue.activation, Activation::swiglu);
  EXPECT_FALSE(c_api::to_cpp(e).epilogue.bias);
  EXPECT_EQ(c_api::to_cpp(e).routing.top_k, 0);
  e.activation = VKGMM_ACTIVATION_NONE;
  e.bias = 7;  // any nonzero int is true, as the other C flags
  EXPECT_TRUE(c_api::to_cpp(e).epilogue.bias);
  EXPECT_EQ(c_api::to_cpp(e).epilogue.activation, Activation::none);
  EXPECT_STREQ(activation_name(Activation::swiglu), "swiglu");
  EXPECT_STREQ(activation_name(Activation::none), "none");
  // Every C activation reaches its C++ one, and every name reads back.
  e.activation = VKGMM_ACTIVATION_SWIGLU_OAI;
  EXPECT_EQ(c_api::to_cpp(e).epilogue.activation, Activation::swiglu_oai);
  e.activation = VKGMM_ACTIVATION_GEGLU;
  EXPECT_EQ(c_api::to_cpp(e).epilogue.activation, Activation::geglu);
  for (Activation a : {Activation::none, Activation::swiglu, Activation::swiglu_oai, Activation::geglu})
    EXPECT_EQ(activation_of_name(activation_name(a)), a);
  EXPECT_FALSE(activation_of_name("gelu").has_value());
  EXPECT_FALSE(activation_of_name(nullptr).has_value());
  // Past the list: refused by the C API (before any GPU work), unknown to the C++ one.
  const int past_the_list = 4;  // copied in: a C enum without a fixed type cannot be cast from it
  std::memcpy(&e.activation, &past_the_list, sizeof past_the_list);
  EXPECT_THROW(c_api::to_cpp(e), Error);
  EXPECT_FALSE(is_known(static_cast<Activation>(4)));
  EXPECT_STREQ(activation_name(static_cast<Activation>(4)), "unknown");
}

// Every spelling of the activations comes from VKGMM_ACTIVATIONS (vkgmm/vocabulary.h): each row's C and
// C++ values, name, gating and the shaders' constant agree.
TEST(CDefaults, ActivationsComeFromOneList) {
  size_t rows = 0;
  std::string names;
#define CHECK_ROW_(name, NAME, value, is_gated)                                     \
  EXPECT_EQ(static_cast<uint32_t>(Activation::name), uint32_t(value));              \
  EXPECT_EQ(static_cast<int>(VKGMM_ACTIVATION_##NAME), value);                      \
  EXPECT_STREQ(activation_name(Activation::name), #name);                           \
  EXPECT_EQ(gated(Activation::name), bool(is_gated));                               \
  EXPECT_TRUE(is_known(Activation::name));                                             \
  names += std::string(rows++ ? ", " : "") + #name;
  VKGMM_ACTIVATIONS(CHECK_ROW_)
#undef CHECK_ROW_
  EXPECT_EQ(rows, 4u);
  EXPECT_EQ(names, kActivationNames);
  EXPECT_EQ(names, "none, swiglu, swiglu_oai, geglu");
}

// Every spelling of the element types comes from VKGMM_DTYPES: each row's C and C++ values, name (which
// parses back), block sizes and whether it is a block format agree, and the block formats' list that
// messages and help print is the rows' own.
TEST(CDefaults, DTypesComeFromOneList) {
  std::string blocks;
#define CHECK_ROW_(name, NAME, value, values, bytes, ggml)                   \
  EXPECT_EQ(static_cast<uint32_t>(DType::name), uint32_t(value));            \
  EXPECT_EQ(static_cast<int>(VKGMM_##NAME), value);                          \
  EXPECT_STREQ(dtype_name(DType::name), #name);                              \
  EXPECT_EQ(parse_dtype(#name), DType::name);                                \
  EXPECT_EQ(block_elements(DType::name), size_t(values));                    \
  EXPECT_EQ(block_bytes(DType::name), size_t(bytes));                        \
  EXPECT_EQ(is_quantized(DType::name), values > 1);                          \
  if (values > 1) blocks += std::string(blocks.empty() ? "" : ", ") + #name;
  VKGMM_DTYPES(CHECK_ROW_)
#undef CHECK_ROW_
  EXPECT_EQ(blocks, block_format_names());
  EXPECT_EQ(blocks, "q8_0, q4_0, q4_K, q6_K, mxfp4, q4_1, q5_0, q5_1, iq4_nl, q5_K, iq4_xs, q2_K, q3_K");
}

// The rules of the new fields, under their C names (the C++ checks name the C++ fields).
TEST(CDefaults, RoutingRulesUnderTheCNames) {
  auto message = [](const vkgmm_gmm_problem& c) -> std::string {
    try {
      c_api::to_cpp(c);
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      return e.what();
    }
    return "no error";
  };
  auto routed = [] {
    auto c = default_c<vkgmm_gmm_problem>();
    c.group_sizes = nullptr;
    c.num_groups = 0;
    c.num_rhs_groups = 2;
    c.top_k = 2;
    return c;
  };
  EXPECT_EQ(message(routed()), "no error");
  auto c = routed();
  c.top_k = -1;
  EXPECT_NE(message(c).find("top_k = -1"), std::string::npos) << message(c);
  c = routed();
  c.num_experts = -4;
  EXPECT_NE(message(c).find("num_experts = -4"), std::string::npos) << message(c);
  c = routed();
  c.num_rhs_groups = 0;
  EXPECT_NE(message(c).find("num_rhs_groups"), std::string::npos) << message(c);
  // With num_experts, 0 is the rest of the experts; -1 is a shard of none.
  c.num_experts = 5, c.group_offset = 2;
  EXPECT_EQ(c_api::to_cpp(c).num_rhs_groups, 3);
  c.num_rhs_groups = -1;
  EXPECT_EQ(c_api::to_cpp(c).num_rhs_groups, 0);
  c = routed();
  c.num_groups = kGroups;
  c.group_sizes = kSizes;
  EXPECT_NE(message(c).find("leave group_sizes NULL"), std::string::npos) << message(c);
  c = routed();
  c.device_group_count = kGroups;
  EXPECT_NE(message(c).find("device_group_count 0"), std::string::npos) << message(c);
  // Routing fields without top_k.
  c = default_c<vkgmm_gmm_problem>();
  c.lhs_per_slot = 1;
  EXPECT_NE(message(c).find("lhs_per_slot is set, but top_k = 0"), std::string::npos) << message(c);
  c = default_c<vkgmm_gmm_problem>();
  c.combine = 1;
  EXPECT_NE(message(c).find("combine is set, but top_k = 0"), std::string::npos) << message(c);
  c = default_c<vkgmm_gmm_problem>();
  c.num_experts = 5;
  EXPECT_NE(message(c).find("num_experts is set, but top_k = 0"), std::string::npos) << message(c);
  c = default_c<vkgmm_gmm_problem>();
  const int bad_activation = 4;  // one past the last (VKGMM_ACTIVATION_GEGLU)
  std::memcpy(&c.activation, &bad_activation, sizeof bad_activation);
  EXPECT_NE(message(c).find("activation = 4 is not a vkgmm_activation"), std::string::npos) << message(c);
}

// The operands' views, ids / weights / bias included, reach the C++ operands as they are.
TEST(CDefaults, GmmOperandsAreTheCppOnes) {
  vkgmm_gmm_operands c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  vkgmm_buffer_view* views[] = {&c.lhs,       &c.rhs,    &c.out, &c.existing_out, &c.group_sizes,
                                &c.workspace, &c.status, &c.ids, &c.weights,      &c.bias};
  for (size_t i = 0; i < std::size(views); ++i)
    *views[i] = {reinterpret_cast<VkBuffer>(uintptr_t(0x1000 + i)), 4 * i, 100 + i};
  const GmmOperands o = c_api::to_cpp(c_api::read_struct(&c, "ops", "vkgmm_gmm_operands"));
  const BufferView got[] = {o.lhs,       o.rhs,    o.out, o.existing_out, o.group_sizes,
                            o.workspace, o.status, o.ids, o.weights,      o.bias};
  for (size_t i = 0; i < std::size(got); ++i) {
    EXPECT_EQ(got[i].buffer, views[i]->buffer) << "view " << i;
    EXPECT_EQ(got[i].offset, views[i]->offset) << "view " << i;
    EXPECT_EQ(got[i].size, views[i]->size) << "view " << i;
  }
}

// A caller built against the vkgmm.h before routing and the epilogue: its smaller problem and operands
// are read with no routing, no epilogue and zero ids / weights / bias views, whatever lies past them.
TEST(CDefaults, StructsFromBeforeRouting) {
  auto g = default_c<vkgmm_gmm_problem>();
  g.struct_size = offsetof(vkgmm_gmm_problem, top_k);
  g.top_k = -3;  // past the caller's struct: not read
  g.combine = 1;
  g.num_experts = -1;
  g.bias = 1;
  std::memset(&g.activation, 0x7f, sizeof g.activation);
  const GmmProblem p = c_api::to_cpp(c_api::read_struct(&g, "problem", "vkgmm_gmm_problem"));
  expect_same_routing(p, default_cpp<GmmProblem>());

  vkgmm_gmm_operands ops;
  std::memset(&ops, 0xcd, sizeof ops);
  ops.struct_size = offsetof(vkgmm_gmm_operands, ids);
  const GmmOperands o = c_api::to_cpp(c_api::read_struct(&ops, "ops", "vkgmm_gmm_operands"));
  for (const BufferView& v : {o.ids, o.weights, o.bias}) {
    EXPECT_EQ(v.buffer, VkBuffer(VK_NULL_HANDLE));
    EXPECT_EQ(v.offset, 0u);
    EXPECT_EQ(v.size, 0u);
  }
  EXPECT_NE(o.status.buffer, VkBuffer(VK_NULL_HANDLE));  // the caller's (0xcd...): read as given
  // A newer caller's: the struct is accepted while its unknown tail is zero.
  struct {
    vkgmm_gmm_problem p;
    int64_t future;
  } newer{};
  newer.p = default_c<vkgmm_gmm_problem>();
  newer.p.struct_size = sizeof newer;
  newer.p.activation = VKGMM_ACTIVATION_SWIGLU;
  EXPECT_EQ(c_api::to_cpp(c_api::read_struct(&newer.p, "problem", "vkgmm_gmm_problem")).epilogue.activation,
            Activation::swiglu);
}

TEST(CDefaults, TgmmProblemIsTheCppDefault) {
  const TgmmProblem c = c_api::to_cpp(default_c<vkgmm_tgmm_problem>()), p = default_cpp<TgmmProblem>();
  expect_same_common_fields(c, p);
  EXPECT_EQ(c.num_actual_groups, p.num_actual_groups);  // C's 0 is C++'s -1
  EXPECT_EQ(c.lhs_mk, p.lhs_mk);
  EXPECT_EQ(c.out_nk, p.out_nk);
}

// A C switch whose C++ default is on is a tri-state: 0 the default, 1 on, -1 off.
TEST(CDefaults, TopKProblemIsTheCppDefault) {
  vkgmm_top_k_problem c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.tokens = 3, c.experts = 8, c.top_k = 2;
  EXPECT_EQ(c_api::to_cpp(c).renormalize, TopKProblem{}.renormalize);
  EXPECT_TRUE(TopKProblem{}.renormalize);
  c.renormalize = -1;
  EXPECT_FALSE(c_api::to_cpp(c).renormalize);
  c.renormalize = 1;
  EXPECT_TRUE(c_api::to_cpp(c).renormalize);
}

// A zero MoE layer problem (its sizes set) takes every expert from expert_offset on and renormalizes, as
// C++'s default does; its activation is taken as given (0: none).
TEST(CDefaults, MoeLayerProblemIsTheCppDefault) {
  vkgmm_moe_layer_problem c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.tokens = 4, c.d_model = 8, c.d_ff = 8, c.num_experts = 6, c.top_k = 2, c.expert_offset = 2;
  const MoeLayerProblem cpp = c_api::to_cpp(c), p;
  EXPECT_EQ(cpp.local_experts, p.local_experts);
  EXPECT_EQ(cpp.renormalize, p.renormalize);
  EXPECT_EQ(cpp.up_bias, p.up_bias);
  EXPECT_EQ(cpp.down_bias, p.down_bias);
  EXPECT_EQ(cpp.dtype, p.dtype);
  EXPECT_EQ(cpp.weight_type, p.weight_type);
  EXPECT_EQ(cpp.down_weight_type, p.down_weight_type);
  EXPECT_EQ(cpp.accumulate, p.accumulate);
  EXPECT_EQ(cpp.transpose_weights, p.transpose_weights);
  EXPECT_EQ(cpp.forward_only, p.forward_only);
  EXPECT_EQ(cpp.activation, Activation::none);
  c.local_experts = -1;
  EXPECT_EQ(c_api::to_cpp(c).local_experts, p.local_experts);
  c.local_experts = 3;
  EXPECT_EQ(c_api::to_cpp(c).local_experts, 3);
  c.renormalize = -1;
  EXPECT_FALSE(c_api::to_cpp(c).renormalize);
  c.transpose_weights = 1;
  EXPECT_TRUE(c_api::to_cpp(c).transpose_weights);
  c.forward_only = 1;
  EXPECT_TRUE(c_api::to_cpp(c).forward_only);
  c.reserved_tail = 1;
  EXPECT_THROW(c_api::to_cpp(c), Error);
}

// Through the public entry points: a plan from the default C problem and one from the default C++ problem,
// on one device, pick the same tiling and ask for the same operand and workspace sizes.
class CDefaultsPlans : public DeviceTest {
 protected:
  void SetUp() override {
    vkgmm_context_options o;
    std::memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    ASSERT_EQ(vkgmm_context_create(&o, &c_ctx_), VKGMM_OK) << vkgmm_last_error_message();
  }
  void TearDown() override {
    vkgmm_context_destroy(c_ctx_);
    DeviceTest::TearDown();
  }
  vkgmm_context* c_ctx_ = nullptr;
};

// The C plans' schedule accessors, by handle type.
vkgmm_status plan_schedule(const vkgmm_gmm_plan* p, vkgmm_schedule* out) { return vkgmm_gmm_plan_schedule(p, out); }
vkgmm_status plan_schedule(const vkgmm_tgmm_plan* p, vkgmm_schedule* out) { return vkgmm_tgmm_plan_schedule(p, out); }

// A C plan's tiling, schedule and sizes against a C++ plan's.
template <typename CPlan, typename Plan>
void expect_same_plan(const CPlan* c_plan, const Plan& plan, vkgmm_status (*tiling)(const CPlan*, vkgmm_tiling*),
                      vkgmm_status (*sizes)(const CPlan*, vkgmm_operand_sizes*)) {
  vkgmm_tiling t{};
  vkgmm_operand_sizes s{sizeof s};
  vkgmm_schedule schedule = VKGMM_SCHEDULE_AUTO;
  ASSERT_EQ(tiling(c_plan, &t), VKGMM_OK);
  ASSERT_EQ(sizes(c_plan, &s), VKGMM_OK);
  ASSERT_EQ(plan_schedule(c_plan, &schedule), VKGMM_OK);
  EXPECT_EQ(Tiling({t.tm, t.tk, t.tn}), plan.tiling());
  EXPECT_EQ(int(schedule), int(plan.schedule()));
  EXPECT_NE(schedule, VKGMM_SCHEDULE_AUTO);
  EXPECT_EQ(s.lhs, plan.sizes().lhs);
  EXPECT_EQ(s.rhs, plan.sizes().rhs);
  EXPECT_EQ(s.out, plan.sizes().out);
  EXPECT_EQ(s.existing_out, plan.sizes().existing_out);
  EXPECT_EQ(s.metadata, plan.metadata_bytes());
  EXPECT_EQ(s.workspace, plan.workspace_bytes());
}

TEST_F(CDefaultsPlans, GmmAndBackwardPlansAgree) {
  const auto c = default_c<vkgmm_gmm_problem>();
  vkgmm_gmm_plan* c_plan = nullptr;
  ASSERT_EQ(vkgmm_gmm_plan_create(c_ctx_, &c, &c_plan), VKGMM_OK) << vkgmm_last_error_message();
  expect_same_plan(c_plan, GmmPlan(ctx(), default_cpp<GmmProblem>()), vkgmm_gmm_plan_tiling, vkgmm_gmm_plan_sizes);
  vkgmm_gmm_plan_destroy(c_plan);

  vkgmm_gmm_backward_plan* c_backward = nullptr;
  ASSERT_EQ(vkgmm_gmm_backward_plan_create(c_ctx_, &c, &c_backward), VKGMM_OK) << vkgmm_last_error_message();
  const GmmBackwardPlan backward(ctx(), default_cpp<GmmProblem>());
  vkgmm_gmm_backward_sizes b{sizeof b};
  ASSERT_EQ(vkgmm_gmm_backward_plan_sizes(c_backward, &b), VKGMM_OK);
  const GmmBackwardSizes want = backward.sizes();
  EXPECT_EQ(b.lhs, want.lhs);
  EXPECT_EQ(b.rhs, want.rhs);
  EXPECT_EQ(b.d_out, want.d_out);
  EXPECT_EQ(b.d_lhs, want.d_lhs);
  EXPECT_EQ(b.d_rhs, want.d_rhs);
  EXPECT_EQ(b.metadata, backward.metadata_bytes());
  EXPECT_EQ(b.workspace, backward.workspace_bytes());
  vkgmm_gmm_backward_plan_destroy(c_backward);
}

// vkgmm_context_info is the context's DeviceInfo, field for field.
TEST_F(CDefaultsPlans, DeviceInfoIsTheContexts) {
  vkgmm_device_info c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  ASSERT_EQ(vkgmm_context_info(c_ctx_, &c), VKGMM_OK) << vkgmm_last_error_message();
  const DeviceInfo& i = c_ctx_->ctx.info();
  EXPECT_EQ(c.struct_size, sizeof c);
  EXPECT_STREQ(c.name, i.name.c_str());
  EXPECT_STREQ(c.driver, i.driver.c_str());
  EXPECT_STREQ(c.architecture, i.architecture.c_str());
  EXPECT_STREQ(c.matrix_extension, i.matrix_extension.c_str());
  EXPECT_EQ(c.vendor_id, i.vendor_id);
  EXPECT_EQ(c.device_id, i.device_id);
  EXPECT_EQ(c.subgroup_size, i.subgroup_size);
  EXPECT_EQ(c.max_shared_memory, i.max_shared_memory);
  EXPECT_EQ(c.max_storage_buffer_range, i.max_storage_buffer_range);
  EXPECT_EQ(c.min_storage_buffer_offset_alignment, i.min_storage_buffer_offset_alignment);
  EXPECT_EQ(c.device_local_bytes, i.device_local_bytes);
  EXPECT_EQ(c.compute_units, i.compute_units);
  EXPECT_EQ(c.storage_buffer_16bit, int32_t(i.storage_buffer_16bit));
  EXPECT_EQ(c.timestamps, int32_t(i.timestamps));
  EXPECT_EQ(c.timestamp_period_ns, i.timestamp_period_ns);
  // The device's own limits, not placeholders.
  EXPECT_GT(c.subgroup_size, 0u);
  EXPECT_GT(c.min_storage_buffer_offset_alignment, 0u);
  EXPECT_EQ(c.min_storage_buffer_offset_alignment & (c.min_storage_buffer_offset_alignment - 1), 0u);
  // No vkgmm.h declared a smaller one: a size below it is a caller's mistake.
  vkgmm_device_info short_one = c;
  short_one.struct_size = offsetof(vkgmm_device_info, device_id);
  EXPECT_EQ(vkgmm_context_info(c_ctx_, &short_one), VKGMM_INVALID_ARGUMENT);
  EXPECT_EQ(vkgmm_context_info(nullptr, &c), VKGMM_INVALID_ARGUMENT);
  EXPECT_EQ(vkgmm_context_info(c_ctx_, nullptr), VKGMM_INVALID_ARGUMENT);
}

TEST_F(CDefaultsPlans, TgmmPlansAgree) {
  const auto c = default_c<vkgmm_tgmm_problem>();
  vkgmm_tgmm_plan* c_plan = nullptr;
  ASSERT_EQ(vkgmm_tgmm_plan_create(c_ctx_, &c, &c_plan), VKGMM_OK) << vkgmm_last_error_message();
  expect_same_plan(c_plan, TgmmPlan(ctx(), default_cpp<TgmmProblem>()), vkgmm_tgmm_plan_tiling,
                   vkgmm_tgmm_plan_sizes);
  vkgmm_tgmm_plan_destroy(c_plan);
}

// Device group sizes: device_group_count and expected_group_rows are DeviceGroupSizes' count and
// expected_rows (0 the default in both), and the plans agree on tiling, sizes and workspace.
template <typename C>
C device_c(int64_t expected_rows) {
  C c = default_c<C>();
  c.group_sizes = nullptr;
  c.num_groups = 0;
  c.device_group_count = kGroups;
  c.expected_group_rows = expected_rows;
  return c;
}
template <typename P>
P device_cpp(int64_t expected_rows) {
  P p = default_cpp<P>();
  p.group_sizes.clear();
  p.device_group_sizes = {kGroups, expected_rows};
  return p;
}

TEST(CDefaults, DeviceGroupSizesAreTheCppOnes) {
  for (int64_t rows : {0, 9}) {
    expect_same_common_fields(c_api::to_cpp(device_c<vkgmm_gmm_problem>(rows)), device_cpp<GmmProblem>(rows));
    expect_same_common_fields(c_api::to_cpp(device_c<vkgmm_tgmm_problem>(rows)), device_cpp<TgmmProblem>(rows));
  }
  // The rules, under the C names.
  auto message = [](const vkgmm_gmm_problem& c) -> std::string {
    try {
      c_api::to_cpp(c);
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      return e.what();
    }
    return "no error";
  };
  auto c = device_c<vkgmm_gmm_problem>(0);
  c.device_group_count = -1;
  EXPECT_NE(message(c).find("device_group_count = -1"), std::string::npos) << message(c);
  c = device_c<vkgmm_gmm_problem>(-2);
  EXPECT_NE(message(c).find("expected_group_rows = -2"), std::string::npos) << message(c);
  c = device_c<vkgmm_gmm_problem>(0);
  c.num_groups = kGroups;
  c.group_sizes = kSizes;
  EXPECT_NE(message(c).find("leave group_sizes NULL"), std::string::npos) << message(c);
  c = default_c<vkgmm_gmm_problem>();
  c.expected_group_rows = 4;
  EXPECT_NE(message(c).find("device_group_count = 0"), std::string::npos) << message(c);
}

TEST_F(CDefaultsPlans, DevicePlansAgree) {
  for (int64_t rows : {0, 2}) {
    const auto g = device_c<vkgmm_gmm_problem>(rows);
    vkgmm_gmm_plan* gp = nullptr;
    ASSERT_EQ(vkgmm_gmm_plan_create(c_ctx_, &g, &gp), VKGMM_OK) << vkgmm_last_error_message();
    const GmmPlan cpp_gmm(ctx(), device_cpp<GmmProblem>(rows));
    EXPECT_EQ(cpp_gmm.num_tiles(), -1);  // the device path's (its workspace: none where the kernel reads the sizes)
    expect_same_plan(gp, cpp_gmm, vkgmm_gmm_plan_tiling, vkgmm_gmm_plan_sizes);
    vkgmm_gmm_plan_destroy(gp);

    vkgmm_gmm_backward_plan* bp = nullptr;
    ASSERT_EQ(vkgmm_gmm_backward_plan_create(c_ctx_, &g, &bp), VKGMM_OK) << vkgmm_last_error_message();
    vkgmm_gmm_backward_sizes b{sizeof b};
    ASSERT_EQ(vkgmm_gmm_backward_plan_sizes(bp, &b), VKGMM_OK);
    EXPECT_EQ(b.workspace, GmmBackwardPlan(ctx(), device_cpp<GmmProblem>(rows)).workspace_bytes());
    vkgmm_gmm_backward_plan_destroy(bp);

    const auto t = device_c<vkgmm_tgmm_problem>(rows);
    vkgmm_tgmm_plan* tp = nullptr;
    ASSERT_EQ(vkgmm_tgmm_plan_create(c_ctx_, &t, &tp), VKGMM_OK) << vkgmm_last_error_message();
    expect_same_plan(tp, TgmmPlan(ctx(), device_cpp<TgmmProblem>(rows)), vkgmm_tgmm_plan_tiling,
                     vkgmm_tgmm_plan_sizes);
    vkgmm_tgmm_plan_destroy(tp);
  }
}

// A caller built against the vkgmm.h before device group sizes: its smaller structs are read with the
// new fields at their defaults (the host path), and its smaller vkgmm_operand_sizes is filled up to its size.
TEST_F(CDefaultsPlans, StructsFromBeforeDeviceGroupSizes) {
  auto g = default_c<vkgmm_gmm_problem>();
  g.struct_size = offsetof(vkgmm_gmm_problem, device_group_count);
  g.device_group_count = 99;  // past the caller's struct: not read
  g.expected_group_rows = -5;
  EXPECT_EQ(c_api::to_cpp(c_api::read_struct(&g, "problem", "vkgmm_gmm_problem")).device_group_sizes.count, 0);
  vkgmm_gmm_plan* gp = nullptr;
  ASSERT_EQ(vkgmm_gmm_plan_create(c_ctx_, &g, &gp), VKGMM_OK) << vkgmm_last_error_message();
  vkgmm_operand_sizes s;
  std::memset(&s, 0xab, sizeof s);
  s.struct_size = offsetof(vkgmm_operand_sizes, workspace);
  ASSERT_EQ(vkgmm_gmm_plan_sizes(gp, &s), VKGMM_OK) << vkgmm_last_error_message();
  EXPECT_EQ(s.metadata, GmmPlan(ctx(), default_cpp<GmmProblem>()).metadata_bytes());
  EXPECT_EQ(s.workspace, 0xababababababababull);  // not the caller's: left alone
  // Operands without the device views: the host path's zero views, whatever lies past the caller's struct.
  vkgmm_buffer *l = nullptr, *r = nullptr, *o = nullptr;
  ASSERT_EQ(vkgmm_buffer_create(c_ctx_, s.lhs, &l), VKGMM_OK);
  ASSERT_EQ(vkgmm_buffer_create(c_ctx_, s.rhs, &r), VKGMM_OK);
  ASSERT_EQ(vkgmm_buffer_create(c_ctx_, s.out, &o), VKGMM_OK);
  vkgmm_gmm_operands ops;
  std::memset(&ops, 0xcd, sizeof ops);
  ops.struct_size = offsetof(vkgmm_gmm_operands, group_sizes);
  ops.lhs = vkgmm_buffer_whole(l);
  ops.rhs = vkgmm_buffer_whole(r);
  ops.out = vkgmm_buffer_whole(o);
  ops.existing_out = {};
  EXPECT_EQ(vkgmm_gmm_plan_run(c_ctx_, gp, &ops), VKGMM_OK) << vkgmm_last_error_message();
  for (vkgmm_buffer* b : {l, r, o}) vkgmm_buffer_destroy(b);
  vkgmm_gmm_plan_destroy(gp);

  auto t = default_c<vkgmm_tgmm_problem>();
  t.struct_size = offsetof(vkgmm_tgmm_problem, device_group_count);
  t.device_group_count = 99;
  vkgmm_tgmm_plan* tp = nullptr;
  ASSERT_EQ(vkgmm_tgmm_plan_create(c_ctx_, &t, &tp), VKGMM_OK) << vkgmm_last_error_message();
  vkgmm_tgmm_plan_destroy(tp);
  // Smaller than that is still refused.
  g.struct_size = offsetof(vkgmm_gmm_problem, reserved);
  EXPECT_EQ(vkgmm_gmm_plan_create(c_ctx_, &g, &gp), VKGMM_INVALID_ARGUMENT);
}

// A struct as a later vkgmm.h would have it: first published without new_field.
struct Grown {
  size_t struct_size;
  int64_t old_field;
  int64_t new_field;
};

}  // namespace
}  // namespace vkgmm::test

template <>
inline constexpr size_t vkgmm::c_api::first_size<vkgmm::test::Grown> = offsetof(vkgmm::test::Grown, new_field);

namespace vkgmm::test {
namespace {

Status status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return Status::ok;
}

// A zero vkgmm_context_options (struct_size set) is ContextOptions{}; each C field reaches its option.
TEST(CDefaults, ContextOptionsAreTheCppDefault) {
  auto same = [](const ContextOptions& a, const ContextOptions& b) {
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.validate, b.validate);
    EXPECT_EQ(a.schedule, b.schedule);
    EXPECT_EQ(a.storage16, b.storage16);
    EXPECT_EQ(a.vec4_loads, b.vec4_loads);
    EXPECT_EQ(a.texel_loads, b.texel_loads);
    EXPECT_EQ(a.timeout_s, b.timeout_s);
    EXPECT_EQ(a.device_grid, b.device_grid);
    EXPECT_EQ(a.grid, b.grid);
    EXPECT_EQ(a.persistent_workgroups, b.persistent_workgroups);
    EXPECT_EQ(a.eager_pipelines, b.eager_pipelines);
    EXPECT_EQ(a.matrix_extension, b.matrix_extension);
    EXPECT_EQ(a.app_workspaces, b.app_workspaces);
  };
  vkgmm_context_options c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.validate = 1;
  vkgmm_context* c_ctx = nullptr;
  ASSERT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_OK) << vkgmm_last_error_message();
  ContextOptions o;
  o.validate = true;
  same(c_ctx->ctx.options(), Context(o).options());
  vkgmm_context_destroy(c_ctx);

  c.schedule = VKGMM_SCHEDULE_DIRECT;
  c.storage16 = c.vec4_loads = c.texel_loads = -1;
  c.timeout_s = 5;
  c.device_grid = VKGMM_DEVICE_GRID_UPPER_BOUND;
  c.grid = VKGMM_GRID_PERSISTENT;
  c.persistent_workgroups = 3;
  c.eager_pipelines = 1;
  c.matrix_extension = "VK_NV_cooperative_matrix";
  c.app_workspaces = 1;
  ASSERT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_OK) << vkgmm_last_error_message();
  o.schedule = Schedule::direct;
  o.storage16 = o.vec4_loads = o.texel_loads = false;
  o.timeout_s = 5;
  o.device_grid = DeviceGrid::upper_bound;
  o.grid = Grid::persistent;
  o.persistent_workgroups = 3;
  o.eager_pipelines = true;
  o.matrix_extension = "VK_NV_cooperative_matrix";
  o.app_workspaces = true;
  same(c_ctx->ctx.options(), Context(o).options());
  vkgmm_context_destroy(c_ctx);

  c.timeout_s = -1;
  EXPECT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(vkgmm_last_error_message()).find("timeout_s"), std::string::npos);
  c.timeout_s = 0;
  c.schedule = static_cast<vkgmm_schedule>(7);
  EXPECT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_INVALID_ARGUMENT);
  c.schedule = VKGMM_SCHEDULE_AUTO;
  c.device_grid = static_cast<vkgmm_device_grid>(5);
  EXPECT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(vkgmm_last_error_message()).find("device_grid"), std::string::npos);
  c.device_grid = VKGMM_DEVICE_GRID_AUTO;
  c.grid = static_cast<vkgmm_grid>(6);
  EXPECT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(vkgmm_last_error_message()).find("grid = 6"), std::string::npos);
  c.grid = VKGMM_GRID_AUTO;
  c.reserved_end = 1;
  EXPECT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(vkgmm_last_error_message()).find("reserved_end"), std::string::npos);
  c.reserved_end = 0;
  // A caller built before app_workspaces passes the older size: accepted, plans with their own workspaces.
  c.app_workspaces = 1;
  c.struct_size = offsetof(vkgmm_context_options, app_workspaces);
  ASSERT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_OK) << vkgmm_last_error_message();
  EXPECT_FALSE(c_ctx->ctx.options().app_workspaces);
  vkgmm_context_destroy(c_ctx);
  c.app_workspaces = 0;
  // A caller built before grid passes the older size: accepted, the automatic grid and count.
  c.struct_size = offsetof(vkgmm_context_options, grid);
  ASSERT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_OK) << vkgmm_last_error_message();
  vkgmm_context_destroy(c_ctx);
  // A caller built before device_grid passes the older size: accepted, the automatic grid.
  c.struct_size = offsetof(vkgmm_context_options, device_grid);
  ASSERT_EQ(vkgmm_context_create(&c, &c_ctx), VKGMM_OK) << vkgmm_last_error_message();
  vkgmm_context_destroy(c_ctx);
}

TEST(GrowingStructs, ReadAnyPublishedSize) {
  // An older caller's struct ends before new_field; what lies past it is not the caller's.
  unsigned char older[sizeof(Grown)];
  std::memset(older, 0xab, sizeof older);
  Grown head{offsetof(Grown, new_field), 5, 0};
  std::memcpy(older, &head, offsetof(Grown, new_field));
  const Grown read = c_api::read_struct(reinterpret_cast<const Grown*>(older), "g", "Grown");
  EXPECT_EQ(read.old_field, 5);
  EXPECT_EQ(read.new_field, 0);  // the default
  // A newer caller's: its unknown tail must be zero.
  struct Newer {
    Grown g;
    int64_t newer_field;
  } newer{{sizeof(Newer), 5, 6}, 0};
  EXPECT_EQ(c_api::read_struct(&newer.g, "g", "Grown").new_field, 6);
  newer.newer_field = 1;
  EXPECT_EQ(status_of([&] { c_api::read_struct(&newer.g, "g", "Grown"); }), Status::unsupported);
  // Unset, or smaller than the first published struct.
  Grown bad{0, 5, 6};
  EXPECT_EQ(status_of([&] { c_api::read_struct(&bad, "g", "Grown"); }), Status::invalid_argument);
  bad.struct_size = offsetof(Grown, old_field);
  EXPECT_EQ(status_of([&] { c_api::read_struct(&bad, "g", "Grown"); }), Status::invalid_argument);
}

TEST(GrowingStructs, WriteUpToTheCallersSize) {
  const Grown value{sizeof(Grown), 7, 8};
  unsigned char older[sizeof(Grown) + 8];  // the caller's struct, then memory that is not
  std::memset(older, 0xab, sizeof older);
  const size_t older_size = offsetof(Grown, new_field);
  std::memcpy(older, &older_size, sizeof older_size);
  c_api::write_struct(reinterpret_cast<Grown*>(older), value, "g", "Grown");
  Grown got;
  std::memcpy(&got, older, older_size);
  EXPECT_EQ(got.struct_size, older_size);  // the caller's, kept
  EXPECT_EQ(got.old_field, 7);
  for (size_t i = older_size; i < sizeof older; ++i) EXPECT_EQ(older[i], 0xab) << "byte " << i << " written";
}

}  // namespace
}  // namespace vkgmm::test
