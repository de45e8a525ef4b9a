// Device faults surface as errors naming the VkResult, never as an abort or a hang: failed submissions
// and timed-out waits leave the context usable; device loss is reported, then refused at once.
// Faults are injected (host/faults.hpp) so that these paths run on any device.
#include <chrono>
#include <cstdlib>

#include "context_impl.hpp"
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

GmmProblem small_gmm() {
  GmmProblem p;
  p.m = 32;
  p.k = 16;
  p.n = 8;
  p.group_sizes = {10, 0, 22};
  return p;
}

// Runs a gmm; on success checks it against the reference.
void expect_gmm_works(Context& c) { expect_gmm_matches_reference(c, small_gmm(), 3); }

// Expects Error(status) whose message contains every needle.
template <typename F>
void expect_error(F&& f, Status status, std::initializer_list<const char*> needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

Context validated_context() { return DeviceTest::make_context({}); }

TEST_F(DeviceTest, FailedSubmitIsAnErrorAndRunsNothing) {
  GmmProblem p = small_gmm();
  GmmPlan plan(ctx(), p);
  Buffer lhs = ctx().create_buffer(plan.sizes().lhs), rhs = ctx().create_buffer(plan.sizes().rhs);
  Buffer out = ctx().create_buffer(plan.sizes().out);
  std::vector<uint8_t> poison(plan.sizes().out, 0x5A), after(plan.sizes().out);
  out.upload(poison.data(), poison.size());
  ContextInternals::of(ctx()).submitter.faults.arm(FaultPoint::submit, VK_ERROR_OUT_OF_HOST_MEMORY);
  expect_error([&] { ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, {lhs.view(), rhs.view(), out.view(), {}}); }); },
               Status::out_of_memory, {"vkQueueSubmit", "VK_ERROR_OUT_OF_HOST_MEMORY"});
  out.download(after.data(), after.size());
  EXPECT_EQ(after, poison);
  ContextInternals::of(ctx()).submitter.faults.arm(FaultPoint::submit, VK_ERROR_UNKNOWN);
  expect_error([&] { expect_gmm_works(ctx()); }, Status::vulkan_error, {"VK_ERROR_UNKNOWN"});
  expect_gmm_works(ctx());  // usable afterwards
}

TEST_F(DeviceTest, InjectedTimeoutIsAnErrorAndTheContextStaysUsable) {
  ContextInternals::of(ctx()).submitter.faults.arm(FaultPoint::wait, VK_TIMEOUT);
  expect_error([&] { expect_gmm_works(ctx()); }, Status::device_lost, {"vkWaitForFences", "VK_TIMEOUT"});
  expect_gmm_works(ctx());
  ContextInternals::of(ctx()).submitter.faults.arm(FaultPoint::wait, VK_ERROR_OUT_OF_DEVICE_MEMORY);
  expect_error([&] { expect_gmm_works(ctx()); }, Status::out_of_memory, {"VK_ERROR_OUT_OF_DEVICE_MEMORY"});
  expect_gmm_works(ctx());
}

// A real timeout: VKGMM_TIMEOUT_S far below what the dispatch takes. The call returns within a bounded
// time with an error; the work it left running is reaped later and the context keeps working. Once that
// work has finished, a buffer destroyed is freed at once, with no submit_and_wait in between (an app
// recording into its own command buffers may never make one).
TEST_F(DeviceTest, RealTimeoutIsBoundedAndRecoverable) {
  std::mt19937 rng(5);
  GmmProblem p;
  p.m = 512, p.k = 256, p.n = 256, p.group_sizes = {100, 300, 112};
  auto l = random_values(size_t(p.m) * p.k, DType::f32, rng);
  auto r = random_values(3 * size_t(p.k) * p.n, DType::f32, rng);
  ContextOptions o;
  o.timeout_s = 0.000001;
  Context c = make_context(o);
  const auto t0 = std::chrono::steady_clock::now();
  expect_error([&] { run_gmm(c, p, l, r); }, Status::device_lost, {"VK_TIMEOUT", "VKGMM_TIMEOUT_S"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 30.0);
  ASSERT_EQ(vkQueueWaitIdle(ContextInternals::of(c).dev.queue), VK_SUCCESS);
  { Buffer b = c.create_buffer(64); }
  EXPECT_TRUE(ContextInternals::of(c).submitter.idle());
  // The timed-out work and the buffers it used were parked, not freed under the device; the context
  // keeps working (its bound lifted here, through the internals, so the next run can finish).
  ContextInternals::of(c).dev.options.timeout_s = 600;
  EXPECT_TRUE(all_close(run_gmm(c, p, l, r), reference::gmm(p, l, r), 1e-3, 1e-5));
  EXPECT_TRUE(ContextInternals::of(c).submitter.settle());
  EXPECT_TRUE(ContextInternals::of(c).submitter.idle());
}

TEST_F(DeviceTest, DeviceLossIsReportedThenRefusedFast) {
  Context c = validated_context();
  expect_gmm_works(c);
  ContextInternals::of(c).submitter.faults.arm(FaultPoint::wait, VK_ERROR_DEVICE_LOST);
  expect_error([&] { expect_gmm_works(c); }, Status::device_lost, {"vkWaitForFences", "VK_ERROR_DEVICE_LOST"});
  // Every later submission fails at once (a lost device never comes back), naming the loss.
  expect_error([&] { expect_gmm_works(c); }, Status::device_lost, {"VK_ERROR_DEVICE_LOST", "new Context"});
  EXPECT_TRUE(c.take_validation_messages().empty());
  // A lost submission at vkQueueSubmit is reported the same way, on a fresh context.
  Context d = validated_context();
  ContextInternals::of(d).submitter.faults.arm(FaultPoint::submit, VK_ERROR_DEVICE_LOST);
  expect_error([&] { expect_gmm_works(d); }, Status::device_lost, {"vkQueueSubmit", "VK_ERROR_DEVICE_LOST"});
  expect_error([&] { d.create_buffer(64); }, Status::device_lost, {"VK_ERROR_DEVICE_LOST"});
}

// The CLI and other programs inject through the environment (VKGMM_INJECT_FAULT, read with the
// Context's options; host/options.cpp, tested in test_options.cpp): the text arms one fault per Context
// at its first submission.
TEST_F(DeviceTest, ConfiguredFaultArmsOnce) {
  Context c = validated_context();
  ContextInternals::of(c).submitter.faults.configure("wait:VK_ERROR_UNKNOWN");
  expect_error([&] { expect_gmm_works(c); }, Status::vulkan_error, {"VK_ERROR_UNKNOWN"});
  expect_gmm_works(c);  // armed once
  Context d = validated_context();
  ContextInternals::of(d).submitter.faults.configure("sometimes");
  expect_error([&] { expect_gmm_works(d); }, Status::invalid_argument, {"VKGMM_INJECT_FAULT", "sometimes"});
}

// An exception from the caller's recording callback leaves nothing pending and the context usable.
TEST_F(DeviceTest, ThrowingRecorderLeavesTheContextUsable) {
  EXPECT_THROW(ctx().submit_and_wait([](VkCommandBuffer) { throw std::runtime_error("app failure"); }),
               std::runtime_error);
  expect_gmm_works(ctx());
}

}  // namespace
}  // namespace vkgmm::test
