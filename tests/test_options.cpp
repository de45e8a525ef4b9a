// ContextOptions are resolved once per Context (host/options.cpp): a field the app sets wins, an unset
// one takes its default from the VKGMM_* variable, else the built-in default. Tested with a lookup of
// the test's own, so no test changes the process environment (setenv races with getenv in threads).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "options.hpp"
#include "vkgmm/vkgmm.h"

namespace vkgmm {
namespace {

std::map<std::string, std::string>& fake_env() {
  static std::map<std::string, std::string> env;
  return env;
}
const char* lookup(const char* name) {
  auto it = fake_env().find(name);
  return it == fake_env().end() ? nullptr : it->second.c_str();
}
ResolvedOptions resolve(const ContextOptions& o, std::map<std::string, std::string> env) {
  fake_env() = std::move(env);
  return resolve_options(o, lookup);
}

TEST(Options, DefaultsWithoutEnvironment) {
  const ResolvedOptions r = resolve({}, {});
  EXPECT_EQ(r.device, "");
  EXPECT_FALSE(r.validate);
  EXPECT_EQ(r.schedule, Schedule::automatic);
  EXPECT_TRUE(r.storage16);
  EXPECT_TRUE(r.vec4_loads);
  EXPECT_TRUE(r.texel_loads);
  EXPECT_EQ(r.timeout_s, 600);
  EXPECT_EQ(r.inject_fault, "");
}

TEST(Options, EnvironmentGivesTheDefaults) {
  const ResolvedOptions r = resolve({}, {{"VKGMM_DEVICE", "llvmpipe"},
                                         {"VKGMM_VALIDATE", "1"},
                                         {"VKGMM_SCHEDULE", "shared"},
                                         {"VKGMM_DISABLE_16BIT_STORAGE", "1"},
                                         {"VKGMM_DISABLE_VEC4", "1"},
                                         {"VKGMM_DISABLE_TEXEL", "yes"},
                                         {"VKGMM_TIMEOUT_S", "2.5"},
                                         {"VKGMM_INJECT_FAULT", "timeout"}});
  EXPECT_EQ(r.device, "llvmpipe");
  EXPECT_TRUE(r.validate);
  EXPECT_EQ(r.schedule, Schedule::shared);
  EXPECT_FALSE(r.storage16);
  EXPECT_FALSE(r.vec4_loads);
  EXPECT_FALSE(r.texel_loads);
  EXPECT_EQ(r.timeout_s, 2.5);
  EXPECT_EQ(r.inject_fault, "timeout");
  EXPECT_EQ(resolve({}, {{"VKGMM_SCHEDULE", "direct"}}).schedule, Schedule::direct);
  EXPECT_EQ(r.device_grid, DeviceGrid::automatic);
  EXPECT_EQ(resolve({}, {{"VKGMM_DEVICE_GRID", "indirect"}}).device_grid, DeviceGrid::indirect);
  EXPECT_EQ(resolve({}, {{"VKGMM_DEVICE_GRID", "upper_bound"}}).device_grid, DeviceGrid::upper_bound);
  EXPECT_EQ(resolve({}, {{"VKGMM_DEVICE_GRID", "bogus"}}).device_grid, DeviceGrid::automatic);
  // The option wins over the variable; automatic resolves to a grid.
  ContextOptions o;
  o.device_grid = DeviceGrid::upper_bound;
  EXPECT_EQ(resolve(o, {{"VKGMM_DEVICE_GRID", "indirect"}}).device_grid, DeviceGrid::upper_bound);
  EXPECT_NE(device_grid(resolve({}, {}), DeviceInfo{}), DeviceGrid::automatic);
  o.device_grid = static_cast<DeviceGrid>(9);
  EXPECT_THROW(resolve(o, {}), Error);
}

// The persistent grid's switches: $VKGMM_GRID forces a grid unless the option is set, the workgroup
// count takes a whole number (0 and nonsense: the device's compute units); the context's grid wins over
// the problem's, which wins over the automatic choice.
TEST(Options, GridAndPersistentWorkgroups) {
  EXPECT_EQ(resolve({}, {}).grid, Grid::automatic);
  EXPECT_EQ(resolve({}, {{"VKGMM_GRID", "persistent"}}).grid, Grid::persistent);
  EXPECT_EQ(resolve({}, {{"VKGMM_GRID", "per_visit"}}).grid, Grid::per_visit);
  EXPECT_EQ(resolve({}, {{"VKGMM_GRID", "bogus"}}).grid, Grid::automatic);
  ContextOptions o;
  o.grid = Grid::per_visit;
  EXPECT_EQ(resolve(o, {{"VKGMM_GRID", "persistent"}}).grid, Grid::per_visit);
  o.grid = static_cast<Grid>(9);
  try {
    resolve(o, {});
    ADD_FAILURE() << "grid 9 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ContextOptions.grid"), std::string::npos) << e.what();
  }

  DeviceInfo cpu;
  cpu.compute_units = 6;
  EXPECT_EQ(persistent_workgroups(resolve({}, {}), cpu), 6u);
  EXPECT_EQ(persistent_workgroups(resolve({}, {{"VKGMM_PERSISTENT_WORKGROUPS", "5"}}), cpu), 5u);
  for (const char* nonsense : {"", "-2", "3x", "99999999999"})
    EXPECT_EQ(persistent_workgroups(resolve({}, {{"VKGMM_PERSISTENT_WORKGROUPS", nonsense}}), cpu), 6u) << nonsense;
  ContextOptions w;
  w.persistent_workgroups = 9;
  EXPECT_EQ(persistent_workgroups(resolve(w, {{"VKGMM_PERSISTENT_WORKGROUPS", "5"}}), cpu), 9u);
  EXPECT_EQ(persistent_workgroups(resolve({}, {}), DeviceInfo{}), 1u);  // never no workgroup

  const ResolvedOptions none = resolve({}, {}), forced = resolve({}, {{"VKGMM_GRID", "per_visit"}});
  EXPECT_TRUE(persistent_grid("gmm", Grid::persistent, none, cpu));
  EXPECT_FALSE(persistent_grid("gmm", Grid::per_visit, none, cpu));
  EXPECT_FALSE(persistent_grid("gmm", Grid::persistent, forced, cpu));
  EXPECT_THROW(persistent_grid("gmm", static_cast<Grid>(4), none, cpu), Error);
}

// Every choice's name is what its variable takes and what its names give back, the C enumerators are
// its values, and a number outside the list is refused with the list named.
template <typename E, size_t N>
void each_choice_round_trips(const NamedChoice<E> (&rows)[N], const char* env, E ResolvedOptions::*field) {
  for (const NamedChoice<E>& r : rows) {
    EXPECT_STREQ(choice_name(rows, r.value), r.name);
    EXPECT_EQ(choice_of_name(rows, r.name), r.value) << r.name;
    EXPECT_EQ(resolve({}, {{env, r.name}}).*field, r.value) << env << "=" << r.name;
  }
  EXPECT_EQ(choice_name(rows, static_cast<E>(N)), nullptr);
  EXPECT_EQ(choice_of_name(rows, "auto"), std::nullopt);
  EXPECT_EQ(choice_of_name(rows, ""), std::nullopt);
}

TEST(Options, ChoicesAreOneVocabulary) {
  each_choice_round_trips(kSchedules, "VKGMM_SCHEDULE", &ResolvedOptions::schedule);
  each_choice_round_trips(kDeviceGrids, "VKGMM_DEVICE_GRID", &ResolvedOptions::device_grid);
  each_choice_round_trips(kGrids, "VKGMM_GRID", &ResolvedOptions::grid);
  EXPECT_STREQ(schedule_name(Schedule::automatic), "automatic");
  EXPECT_STREQ(schedule_name(static_cast<Schedule>(9)), "?");
  EXPECT_EQ(choice_names(kSchedules), "automatic, shared, direct or matrix");
  EXPECT_EQ(choice_names(kGrids), "automatic, per_visit or persistent");
  static_assert(int(VKGMM_SCHEDULE_MATRIX) == int(Schedule::matrix) && int(VKGMM_DEVICE_GRID_UPPER_BOUND) ==
                int(DeviceGrid::upper_bound) && int(VKGMM_GRID_PERSISTENT) == int(Grid::persistent));
  ContextOptions o;
  o.schedule = static_cast<Schedule>(4);
  try {
    resolve(o, {});
    ADD_FAILURE() << "schedule 4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ContextOptions.schedule: 4 is not automatic, shared, direct or matrix"),
              std::string::npos)
        << e.what();
  }
}

// "0" and "" switch nothing; values that mean nothing keep the defaults, as the variables always did.
TEST(Options, OffAndNonsenseValuesKeepTheDefaults) {
  const ResolvedOptions r = resolve({}, {{"VKGMM_VALIDATE", "0"},
                                         {"VKGMM_SCHEDULE", "fastest"},
                                         {"VKGMM_DISABLE_16BIT_STORAGE", "0"},
                                         {"VKGMM_DISABLE_VEC4", ""},
                                         {"VKGMM_TIMEOUT_S", "-3"}});
  EXPECT_FALSE(r.validate);
  EXPECT_EQ(r.schedule, Schedule::automatic);
  EXPECT_TRUE(r.storage16);
  EXPECT_TRUE(r.vec4_loads);
  EXPECT_EQ(r.timeout_s, 600);
  EXPECT_EQ(resolve({}, {{"VKGMM_TIMEOUT_S", "soon"}}).timeout_s, 600);
}

TEST(Options, FieldsTheAppSetsWinOverTheEnvironment) {
  ContextOptions o;
  o.device = "1";
  o.validate = false;
  o.schedule = Schedule::direct;
  o.storage16 = true;
  o.vec4_loads = true;
  o.texel_loads = true;
  o.timeout_s = 7;
  const ResolvedOptions r = resolve(o, {{"VKGMM_DEVICE", "0"},
                                        {"VKGMM_VALIDATE", "1"},
                                        {"VKGMM_SCHEDULE", "shared"},
                                        {"VKGMM_DISABLE_16BIT_STORAGE", "1"},
                                        {"VKGMM_DISABLE_VEC4", "1"},
                                        {"VKGMM_DISABLE_TEXEL", "1"},
                                        {"VKGMM_TIMEOUT_S", "1"}});
  EXPECT_EQ(r.device, "1");
  EXPECT_FALSE(r.validate);
  EXPECT_EQ(r.schedule, Schedule::direct);
  EXPECT_TRUE(r.storage16 && r.vec4_loads && r.texel_loads);
  EXPECT_EQ(r.timeout_s, 7);
  // An explicit automatic schedule also wins: each problem chooses.
  o.schedule = Schedule::automatic;
  EXPECT_EQ(resolve(o, {{"VKGMM_SCHEDULE", "shared"}}).schedule, Schedule::automatic);
}

TEST(Options, BadFieldsAreRefusedNamingThem) {
  for (double t : {0.0, -1.0, 1.0 / 0.0}) {
    ContextOptions o;
    o.timeout_s = t;
    try {
      resolve(o, {});
      ADD_FAILURE() << "timeout " << t << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("ContextOptions.timeout_s"), std::string::npos) << e.what();
    }
  }
  ContextOptions o;
  o.schedule = static_cast<Schedule>(9);
  EXPECT_THROW(resolve(o, {}), Error);
}

// The stage-buffer count for timing: 1 or 2, anything else the device class's (0).
TEST(Options, StageBuffersFromTheEnvironmentOnly) {
  EXPECT_EQ(resolve({}, {}).stage_buffers, 0u);
  EXPECT_EQ(resolve({}, {{"VKGMM_STAGE_BUFFERS", "2"}}).stage_buffers, 2u);
  EXPECT_EQ(resolve({}, {{"VKGMM_STAGE_BUFFERS", "1"}}).stage_buffers, 1u);
  EXPECT_EQ(resolve({}, {{"VKGMM_STAGE_BUFFERS", "3"}}).stage_buffers, 0u);
  EXPECT_EQ(resolve({}, {{"VKGMM_STAGE_BUFFERS", "two"}}).stage_buffers, 0u);
}

// The timing switches that only the environment sets: the ids read in the kernel, and a barrier before
// each later pass; "1" turns either on, anything else leaves it off.
TEST(Options, TimingSwitchesFromTheEnvironmentOnly) {
  EXPECT_FALSE(resolve({}, {}).route_in_kernel);
  EXPECT_TRUE(resolve({}, {{"VKGMM_ROUTE_IN_KERNEL", "1"}}).route_in_kernel);
  EXPECT_FALSE(resolve({}, {{"VKGMM_ROUTE_IN_KERNEL", "yes"}}).route_in_kernel);
  EXPECT_FALSE(resolve({}, {}).pass_barrier);
  EXPECT_TRUE(resolve({}, {{"VKGMM_PASS_BARRIER", "1"}}).pass_barrier);
  EXPECT_FALSE(resolve({}, {{"VKGMM_PASS_BARRIER", "0"}}).pass_barrier);
  EXPECT_FALSE(resolve({}, {{"VKGMM_PASS_BARRIER", "on"}}).pass_barrier);
  EXPECT_FALSE(resolve({}, {{"VKGMM_ROUTE_IN_KERNEL", "1"}}).pass_barrier);
}

// The tests' switch that numbers the subgroups from the last (shaders/invocation.glsl): "1" only.
TEST(Options, ReverseSubgroupsFromTheEnvironmentOnly) {
  EXPECT_FALSE(resolve({}, {}).reverse_subgroups);
  EXPECT_TRUE(resolve({}, {{"VKGMM_REVERSE_SUBGROUPS", "1"}}).reverse_subgroups);
  EXPECT_FALSE(resolve({}, {{"VKGMM_REVERSE_SUBGROUPS", "0"}}).reverse_subgroups);
  EXPECT_FALSE(resolve({}, {{"VKGMM_REVERSE_SUBGROUPS", "yes"}}).reverse_subgroups);
}

// The tests' switch that stages every buffer (host/buffer_memory.hpp): "1" only.
TEST(Options, StagedMemoryFromTheEnvironmentOnly) {
  EXPECT_FALSE(resolve({}, {}).staged_memory);
  EXPECT_TRUE(resolve({}, {{"VKGMM_STAGED_MEMORY", "1"}}).staged_memory);
  EXPECT_FALSE(resolve({}, {{"VKGMM_STAGED_MEMORY", "0"}}).staged_memory);
}

// Plans compile every variant up front on GPUs, lazily on CPU devices, unless told.
TEST(Options, EagerPipelinesByDeviceTypeUnlessSet) {
  DeviceInfo cpu, gpu;
  cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  gpu.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  EXPECT_FALSE(eager_pipelines(resolve({}, {}), cpu));
  EXPECT_TRUE(eager_pipelines(resolve({}, {}), gpu));
  EXPECT_TRUE(eager_pipelines(resolve({}, {{"VKGMM_EAGER_PIPELINES", "1"}}), cpu));
  EXPECT_FALSE(eager_pipelines(resolve({}, {{"VKGMM_EAGER_PIPELINES", "0"}}), gpu));
  EXPECT_TRUE(eager_pipelines(resolve({}, {{"VKGMM_EAGER_PIPELINES", "yes"}}), gpu));  // nonsense: the default
  ContextOptions o;
  o.eager_pipelines = false;
  EXPECT_FALSE(eager_pipelines(resolve(o, {{"VKGMM_EAGER_PIPELINES", "1"}}), gpu));
}

// The matrix extension: the app's name (one of the two, else refused by name), else the environment's
// where it is one of them, else the default (empty: KHR where vkgmm has its build); reported as resolved.
TEST(Options, MatrixExtensionIsOneOfTheTwo) {
  EXPECT_EQ(resolve({}, {}).matrix_extension, "");
  EXPECT_EQ(resolve({}, {{"VKGMM_MATRIX_EXTENSION", "VK_NV_cooperative_matrix"}}).matrix_extension,
            "VK_NV_cooperative_matrix");
  EXPECT_EQ(resolve({}, {{"VKGMM_MATRIX_EXTENSION", "nv"}}).matrix_extension, "");  // nonsense: the default
  ContextOptions o;
  o.matrix_extension = "VK_KHR_cooperative_matrix";
  EXPECT_EQ(resolve(o, {{"VKGMM_MATRIX_EXTENSION", "VK_NV_cooperative_matrix"}}).matrix_extension,
            "VK_KHR_cooperative_matrix");
  EXPECT_EQ(to_public(resolve(o, {})).matrix_extension, "VK_KHR_cooperative_matrix");
  o.matrix_extension = "VK_KHR_cooperative_matrix2";
  try {
    resolve(o, {});
    ADD_FAILURE() << "an unknown extension accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("ContextOptions.matrix_extension: 'VK_KHR_cooperative_matrix2'"),
              std::string::npos) << e.what();
  }
}

// Context::options() reports what is in force, every field set.
TEST(Options, PublicViewHasEveryFieldSet) {
  const ContextOptions p = to_public(resolve({}, {{"VKGMM_DISABLE_VEC4", "1"}}));
  ASSERT_TRUE(p.validate && p.schedule && p.storage16 && p.vec4_loads && p.texel_loads && p.timeout_s &&
              p.device_grid && p.grid && p.persistent_workgroups);
  EXPECT_FALSE(*p.vec4_loads);
  EXPECT_EQ(*p.timeout_s, 600);
}

}  // namespace
}  // namespace vkgmm
