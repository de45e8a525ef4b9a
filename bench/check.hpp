// The check before timing: the device's result against vkgmm::reference, computed once per workload.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runner.hpp"

namespace bench {

// Runs body(block) for block in [0, blocks) on all cores (the CPU references' column blocks).
void parallel_blocks(int64_t blocks, const std::function<void(int64_t)>& body);

// Rows `rows` of a [*, width] matrix, in that order.
std::vector<float> gather_rows(const std::vector<float>& m, const std::vector<int64_t>& rows, int64_t width);
// The slabs of `experts` (each `per_expert` values) of a per-expert tensor, in that order (empty stays empty).
std::vector<float> gather_experts(const std::vector<float>& all, const std::vector<int32_t>& experts, int64_t per_expert);
// `count` indices spread evenly over [0, n) (all of them when count >= n), ascending: a sampled check's rows.
std::vector<int64_t> spread(int64_t n, int64_t count);

// The expected outputs of `inst`'s workload, in the order Instance::download() returns them.
// Computed by vkgmm::reference (double accumulation); see check.cpp for how it is kept fast.
std::vector<Output> expected_outputs(const Instance& inst);

// The first element outside tolerance, described for a person ("d_rhs[123]: got ..., expected ..."),
// or nothing when every element of every output agrees.
std::optional<std::string> compare(const std::vector<Output>& got, const std::vector<Output>& want,
                                   vkgmm::DType dtype);

// $VKGMM_BENCH_PERTURB=1: the test switch that proves a wrong result is refused. Changes one element of
// the first output by 1.0; returns whether it did. `value`: what the variable must hold for this check
// ("train": --train's check alone, after every other check passed; "forward": moe-grad-ids's forward, so
// that "1" reaches its backward's check, which runs after the forward's).
bool perturb_if_asked(std::vector<Output>& got, const char* value = "1");

}  // namespace bench
