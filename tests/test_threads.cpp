// One Context shared by 8 threads issuing gmm and tgmm at once: every result matches the reference and
// the validation layer (whose thread-safety checks are on) reports nothing. Also one plan recorded from
// every thread at once, buffers made and dropped concurrently, and a validation message kept to the
// thread that caused it.
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "context_impl.hpp"
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

GmmProblem random_gmm(std::mt19937& rng) {
  std::uniform_int_distribution<int> dim(1, 40), groups(1, 5), coin(0, 1);
  GmmProblem p;
  p.m = dim(rng) * 2;
  p.k = dim(rng);
  p.n = dim(rng);
  p.group_sizes = make_group_sizes(Sizes::sum_below_m, groups(rng), p.m, rng);
  p.transpose_rhs = coin(rng);
  p.rhs_type = coin(rng) ? DType::bf16 : DType::f32;
  return p;
}

TgmmProblem random_tgmm(std::mt19937& rng) {
  std::uniform_int_distribution<int> dim(1, 40), groups(1, 5);
  TgmmProblem p;
  p.m = dim(rng) * 2;
  p.k = dim(rng);
  p.n = dim(rng);
  p.group_sizes = make_group_sizes(Sizes::random, groups(rng), p.m, rng);
  return p;
}

TEST_F(DeviceTest, EightThreadsShareOneContext) {
  Context& c = ctx();
  constexpr int kThreads = 8, kRounds = 4;

  // A plan every thread records at once (plans are immutable once built).
  GmmProblem sp;
  sp.m = 48, sp.k = 16, sp.n = 12, sp.group_sizes = {7, 0, 30};
  GmmPlan shared_plan(c, sp);
  std::mt19937 seed_rng(99);
  const auto sl = random_values(size_t(sp.m) * sp.k, DType::f32, seed_rng);
  const auto sr = random_values(3 * size_t(sp.k) * sp.n, DType::f32, seed_rng);
  const auto swant = reference::gmm(sp, sl, sr);
  Buffer slhs = c.create_buffer(sl.size() * 4), srhs = c.create_buffer(sr.size() * 4);
  slhs.upload(sl.data(), sl.size() * 4);
  srhs.upload(sr.data(), sr.size() * 4);

  std::mutex failures_mutex;
  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) {
    std::lock_guard lock(failures_mutex);
    failures.push_back(what);
  };

  auto worker = [&](int t) {
    std::mt19937 rng(1000 + t);
    try {
      for (int round = 0; round < kRounds; ++round) {
        const std::string where = "thread " + std::to_string(t) + " round " + std::to_string(round);
        GmmProblem gp = random_gmm(rng);
        const int64_t g_local = static_cast<int64_t>(gp.group_sizes.size());
        auto gl = random_values(size_t(gp.m) * gp.k, gp.lhs_type, rng);
        auto gr = random_values(size_t(g_local) * gp.k * gp.n, gp.rhs_type, rng);
        if (auto r = all_close(run_gmm(c, gp, gl, gr), reference::gmm(gp, gl, gr), 1e-3, 1e-2); !r)
          fail(where + " gmm: " + r.message());

        TgmmProblem tp = random_tgmm(rng);
        auto tl = random_values(size_t(tp.k) * tp.m, DType::f32, rng);
        auto tr = random_values(size_t(tp.m) * tp.n, DType::f32, rng);
        if (auto r = all_close(run_tgmm(c, tp, tl, tr), reference::tgmm(tp, tl, tr), 1e-3, 1e-5); !r)
          fail(where + " tgmm: " + r.message());

        Buffer out = poisoned(c, swant.size() * 4);  // rows past the groups must be written 0
        c.submit_and_wait(
            [&](VkCommandBuffer cb) { shared_plan.record(cb, {slhs.view(), srhs.view(), out.view(), {}}); });
        std::vector<float> got(swant.size());
        out.download(got.data(), got.size() * 4);
        if (auto r = all_close(got, swant, 1e-3, 1e-5); !r) fail(where + " shared plan: " + r.message());
      }
    } catch (const std::exception& e) {
      fail("thread " + std::to_string(t) + ": " + e.what());
    }
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
  // DeviceTest::TearDown fails the test on any validation message (thread-safety ones included).
}

// Pipelines compile outside the cache's lock: threads making the same plan on a fresh Context at once (set
// off together) may each compile its pipelines; the cache keeps one of each, as many as one thread's plan
// makes, and destroys the others (at teardown the validation layer reports any pipeline left alive), and
// every plan computes the reference's values.
TEST_F(DeviceTest, ThreadsCompilingOnePipelineKeepOne) {
  GmmProblem p;
  p.m = 40, p.k = 24, p.n = 20, p.group_sizes = {9, 0, 31};
  Context alone = make_context({});
  { const GmmPlan plan(alone, p); }
  const size_t one = ContextInternals::of(alone).pipelines.size();
  Context c = make_context({});
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  std::atomic<int> ready{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < 4) std::this_thread::yield();
      try {
        expect_gmm_matches_reference(c, p, uint32_t(t + 1));
      } catch (const std::exception& e) {
        failures[size_t(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
  EXPECT_EQ(ContextInternals::of(c).pipelines.size(), one);
}

// The validation layer reports on the thread whose Vulkan call broke a rule. A message one thread caused
// fails that thread's own call, not a gmm another thread runs meanwhile on the same Context.
TEST_F(DeviceTest, ValidationMessagesFailTheThreadThatCausedThem) {
  Context c = make_context({});
  Buffer target = c.create_buffer(256);
  GmmProblem p;
  p.m = 12, p.k = 8, p.n = 4, p.group_sizes = {5, 7};
  std::atomic<bool> recorded{false}, other_done{false};
  std::string other_failure;
  std::thread other([&] {
    while (!recorded.load()) std::this_thread::yield();
    try {
      expect_gmm_matches_reference(c, p, 7);
    } catch (const std::exception& e) {
      other_failure = e.what();
    }
    other_done.store(true);
  });
  try {
    c.submit_and_wait([&](VkCommandBuffer cb) {
      vkCmdFillBuffer(cb, target.handle(), 0, 0, 0);  // a size of 0 breaks VUID-vkCmdFillBuffer-size-00026
      recorded.store(true);
      while (!other_done.load()) std::this_thread::yield();
    });
    ADD_FAILURE() << "the fill of 0 bytes was not reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::validation) << e.what();
    EXPECT_NE(std::string(e.what()).find("vkCmdFillBuffer"), std::string::npos) << e.what();
  }
  other.join();
  EXPECT_EQ(other_failure, "");
  EXPECT_TRUE(c.take_validation_messages().empty());

  // A thread whose message no call of its own checked (its callback threw first) ends; threads made after
  // it, which the system may give its id, are not failed by that message. It stays for the tests' check.
  std::thread careless([&] {
    try {
      c.submit_and_wait([&](VkCommandBuffer cb) {
        vkCmdFillBuffer(cb, target.handle(), 0, 0, 0);
        throw std::runtime_error("the app's own failure");
      });
    } catch (const std::runtime_error&) {
    }
  });
  careless.join();
  for (int i = 0; i < 4; ++i) {
    std::string failure;
    std::thread later([&] {
      try {
        c.submit_and_wait([](VkCommandBuffer) {});
      } catch (const std::exception& e) {
        failure = e.what();
      }
    });
    later.join();
    EXPECT_EQ(failure, "") << "thread " << i;
  }
  const std::vector<std::string> left = c.take_validation_messages();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0].find("vkCmdFillBuffer"), std::string::npos) << left[0];
}

}  // namespace
}  // namespace vkgmm::test
