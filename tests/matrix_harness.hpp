// The matrix schedule's tests' fixture: skipped, saying why, where the device's matrix units are not in
// use (DeviceInfo::matrix_extension empty: no cooperative-matrix extension, or vkgmm built without a
// compiler for the one it has); and what a plan's kernel is.
#pragma once

#include <string>
#include <vector>

#include "gpu_harness.hpp"
#include "interface.hpp"
#include "plan_internals.hpp"

namespace vkgmm::test {

// The specialization constants of the plan's op kernel (empty where it has none).
template <typename Plan>
std::vector<uint32_t> op_constants(const Plan& plan) {
  for (const PlannedPipeline& pp : PlanInternals::pipelines(plan))
    if (std::string(pp.role) == "op") return pp.constants;
  return {};
}

// Whether the plan's kernel is the matrix build.
template <typename Plan>
bool runs_on_matrix_units(const Plan& plan) {
  const std::vector<uint32_t> c = op_constants(plan);
  return c.size() > VKGMM_ID_MATRIX_M && c[VKGMM_ID_MATRIX_M] != 0;
}

class MatrixTest : public DeviceTest {
 protected:
  void SetUp() override {
    const DeviceInfo& info = ctx().info();
    if (!info.matrix_extension.empty()) return;
    std::string listed;
    for (const std::string& s : info.matrix_shapes) listed += (listed.empty() ? "" : ", ") + s;
    GTEST_SKIP() << info.name << " has no matrix units vkgmm uses (cooperative-matrix shapes listed: "
                 << (listed.empty() ? "none" : listed) << ")";
  }
};

}  // namespace vkgmm::test
