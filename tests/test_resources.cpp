// Resource limits: a request larger than device memory is an out_of_memory error that leaves the context
// usable; 10,000 consecutive calls keep host and device memory flat; every Vulkan object is destroyed
// at teardown (the validation layer's leak reports are collected, not lost).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>

#include "buffer_memory.hpp"
#include "context_impl.hpp"
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

template <typename F>
void expect_error(F&& f, Status status, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

// AddressSanitizer keeps freed memory in quarantine (256 MiB by default): under it RSS says nothing about
// leaks, which LeakSanitizer reports instead.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssIsMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRssIsMeaningful = false;
#else
constexpr bool kRssIsMeaningful = true;
#endif
#else
constexpr bool kRssIsMeaningful = true;
#endif

// Resident set size of this process (/proc/self/statm: the second field, in pages).
uint64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

GmmProblem small_gmm() {
  GmmProblem p;
  p.m = 24;
  p.k = 8;
  p.n = 8;
  p.group_sizes = {5, 0, 19};
  return p;
}

void expect_gmm_works(Context& c) { expect_gmm_matches_reference(c, small_gmm(), 11); }

// The largest heap holding a host-visible coherent memory type or, on vkgmm's own device (its queue to
// stage copies on), a device-local one: what create_buffer measures a request against. lavapipe has one heap.
VkDeviceSize largest_usable_heap(const Context& c) {
  const Device& dev = ContextInternals::of(c).dev;
  const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkDeviceSize h = 0;
  for (uint32_t t = 0; t < dev.memory.memoryTypeCount; ++t) {
    const VkMemoryPropertyFlags f = dev.memory.memoryTypes[t].propertyFlags;
    if ((f & hv) == hv || (dev.owns && dev.queue && (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)))
      h = std::max(h, dev.memory.memoryHeaps[dev.memory.memoryTypes[t].heapIndex].size);
  }
  return h;
}

TEST_F(DeviceTest, BufferLargerThanDeviceMemoryIsOutOfMemory) {
  const VkDeviceSize heap = largest_usable_heap(ctx());
  ASSERT_GT(heap, 0u);
  expect_error([&] { ctx().create_buffer(heap + 1); }, Status::out_of_memory,
               {"create_buffer", std::to_string(heap + 1), "heap", std::to_string(heap)});
  expect_error([&] { ctx().create_buffer(VkDeviceSize{1} << 62); }, Status::out_of_memory, {"create_buffer"});
  expect_gmm_works(ctx());
  EXPECT_EQ(ContextInternals::of(ctx()).buffers.live_allocations(), 0);
}

constexpr VkDeviceSize kSmallHeap = VkDeviceSize{64} << 20;

// A context of the test's own whose heaps are at most kSmallHeap, as vkgmm sees them (a GPU's heap of tens
// of GiB would be allocated for real, and the driver could refuse before vkgmm's count does).
Context context_with_small_heaps() {
  Context c = DeviceTest::make_context({});
  VkPhysicalDeviceMemoryProperties& memory = ContextInternals::of(c).dev.memory;
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    memory.memoryHeaps[i].size = std::min(memory.memoryHeaps[i].size, kSmallHeap);
  return c;
}

// Requests that fit one at a time but not together: vkgmm counts what it holds against the heap.
TEST_F(DeviceTest, BuffersPastTheHeapTogetherAreOutOfMemory) {
  constexpr VkDeviceSize kHeap = kSmallHeap, kPiece = VkDeviceSize{20} << 20;
  Context c = context_with_small_heaps();
  std::vector<Buffer> held;
  bool refused = false;
  for (int i = 0; i < 8 && !refused; ++i) {
    try {
      held.push_back(c.create_buffer(kPiece));
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::out_of_memory) << e.what();
      EXPECT_NE(std::string(e.what()).find("already use"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(kHeap)), std::string::npos) << e.what();
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
  EXPECT_EQ(held.size(), size_t(kHeap / kPiece));
  held.clear();
  expect_gmm_works(c);
  EXPECT_EQ(ContextInternals::of(c).buffers.live_allocations(), 0);
}

// A plan that cannot make its own buffers says which plan and which buffer, not create_buffer (which its
// caller never called), and why: a heap lowered to 64 MiB and filled first; device memory objects past
// maxMemoryAllocationCount (4096 on many drivers; lavapipe's is 2^32 - 1, so it is lowered here), which
// create_buffer refuses too, naming the limit. Each context works again once the buffers are freed.
TEST_F(DeviceTest, PlansNameTheBufferTheyCouldNotMake) {
  GmmProblem p;
  p.m = 64, p.k = 16, p.n = 16;
  p.group_sizes = {30, 34};
  auto refused_then_usable = [&](Context& c, std::vector<Buffer>& held, const char* why) {
    expect_error([&] { GmmPlan(c, p); }, Status::out_of_memory, {"gmm: its metadata (", "bytes): ", why});
    held.clear();
    expect_gmm_works(c);
  };
  {
    Context c = context_with_small_heaps();
    std::vector<Buffer> held;
    for (int i = 0; i < 4; ++i) held.push_back(c.create_buffer(kSmallHeap / 4));
    refused_then_usable(c, held, "already use");
  }
  {
    Context c = make_context({});
    uint32_t& limit = ContextInternals::of(c).dev.max_allocation_count;
    ASSERT_GT(limit, 0u);
    limit = uint32_t(ContextInternals::of(c).buffers.live_allocations()) + 8;  // room for one gmm, once freed
    std::vector<Buffer> held;
    for (int i = 0; i < 8; ++i) held.push_back(c.create_buffer(64));
    expect_error([&] { c.create_buffer(64); }, Status::out_of_memory, {"create_buffer: 64 bytes", "maxMemoryAllocationCount"});
    refused_then_usable(c, held, "maxMemoryAllocationCount");
  }
}

// Memory layouts as drivers report them, and where each buffer goes.
VkPhysicalDeviceMemoryProperties memory_layout(std::vector<VkDeviceSize> heaps, std::vector<VkMemoryHeapFlags> heap_flags,
                                               std::vector<std::pair<VkMemoryPropertyFlags, uint32_t>> types) {
  VkPhysicalDeviceMemoryProperties m{};
  m.memoryHeapCount = uint32_t(heaps.size());
  for (size_t h = 0; h < heaps.size(); ++h) m.memoryHeaps[h] = {heaps[h], heap_flags[h]};
  m.memoryTypeCount = uint32_t(types.size());
  for (size_t t = 0; t < types.size(); ++t) m.memoryTypes[t] = {types[t].first, types[t].second};
  return m;
}

TEST(BufferMemory, StagedOnlyWhereTheHostWindowIsSmall) {
  constexpr VkMemoryPropertyFlags L = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                  HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                  C = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  constexpr VkMemoryHeapFlags DL = VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
  constexpr VkDeviceSize GiB = VkDeviceSize(1) << 30, MiB = VkDeviceSize(1) << 20, big = 64 * MiB, small = 4096;
  // A discrete GPU without resizable BAR: 24 GiB of device memory, system memory, a 256 MiB window.
  const auto bar = memory_layout({24 * GiB, 64 * GiB, 256 * MiB}, {DL, 0, DL}, {{L, 0}, {HV, 1}, {HV | C, 1}, {L | HV, 2}});
  EXPECT_EQ(choose_buffer_memory(bar, ~0u, big, true, false).type, 0u);
  EXPECT_FALSE(choose_buffer_memory(bar, ~0u, big, true, false).mapped);
  EXPECT_EQ(choose_buffer_memory(bar, ~0u, kStagedBufferBytes - 1, true, false).type, 3u);  // the window
  EXPECT_TRUE(choose_buffer_memory(bar, ~0u, small, true, false).mapped);
  EXPECT_EQ(choose_buffer_memory(bar, ~0u, big, false, false).type, 3u);  // no queue to stage on: mapped
  EXPECT_TRUE(choose_buffer_memory(bar, ~0u, big, false, false).mapped);
  EXPECT_EQ(choose_buffer_memory(bar, ~0u & ~1u, big, true, false).type, 3u);  // the buffer takes no unmapped type
  EXPECT_EQ(staging_memory_type(bar, ~0u), 2u);                               // host-cached first
  // A full window: device-local and staged, or without staging system memory; nothing after those.
  EXPECT_EQ(window_fallback(bar, ~0u, true, {3, true}).type, 0u);
  EXPECT_FALSE(window_fallback(bar, ~0u, true, {3, true}).mapped);
  EXPECT_EQ(window_fallback(bar, ~0u, false, {3, true}).type, 1u);
  EXPECT_TRUE(window_fallback(bar, ~0u, false, {3, true}).mapped);
  EXPECT_EQ(window_fallback(bar, ~0u, true, {0, false}).type, UINT32_MAX);
  // The same GPU with resizable BAR: the whole of device memory is mapped.
  const auto rebar = memory_layout({24 * GiB, 64 * GiB, 24 * GiB}, {DL, 0, DL}, {{L, 0}, {HV, 1}, {L | HV, 2}});
  EXPECT_EQ(choose_buffer_memory(rebar, ~0u, big, true, false).type, 2u);
  EXPECT_TRUE(choose_buffer_memory(rebar, ~0u, big, true, false).mapped);
  EXPECT_EQ(window_fallback(rebar, ~0u, true, {2, true}).type, UINT32_MAX);  // device memory itself is full
  // No window at all: large buffers staged, small ones in system memory.
  const auto none = memory_layout({8 * GiB, 16 * GiB}, {DL, 0}, {{L, 0}, {HV, 1}});
  EXPECT_FALSE(choose_buffer_memory(none, ~0u, big, true, false).mapped);
  EXPECT_EQ(choose_buffer_memory(none, ~0u, small, true, false).type, 1u);
  // An integrated GPU or a CPU driver (one heap, mapped): never staged unless forced, which takes the
  // device-local type and leaves it unmapped.
  const auto uma = memory_layout({16 * GiB}, {DL}, {{L | HV | C, 0}});
  EXPECT_TRUE(choose_buffer_memory(uma, ~0u, 4 * GiB, true, false).mapped);
  EXPECT_EQ(window_fallback(uma, ~0u, true, {0, true}).type, UINT32_MAX);
  EXPECT_EQ(choose_buffer_memory(uma, ~0u, small, true, true).type, 0u);
  EXPECT_FALSE(choose_buffer_memory(uma, ~0u, small, true, true).mapped);
  // Nothing the buffer may take.
  EXPECT_EQ(choose_buffer_memory(uma, 0u, small, true, false).type, UINT32_MAX);
}

// Upload and download at any offset and length, across the staging copies' pieces (64 MiB) where the
// buffer is staged (the .staged runs: every buffer), byte for byte.
TEST_F(DeviceTest, BuffersRoundTripAtAnyOffset) {
  constexpr size_t kBytes = (size_t(64) << 20) + 4099;
  Buffer b = ctx().create_buffer(kBytes);
  const std::optional<OwnBuffer> own = ContextInternals::of(ctx()).buffers.find(b.handle());
  ASSERT_TRUE(own.has_value());
  // Staged where forced (the .staged runs) or where this device's memory layout stages a buffer this large.
  const Device& dev = ContextInternals::of(ctx()).dev;
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev.device, b.handle(), &req);
  const bool by_layout = !choose_buffer_memory(dev.memory, req.memoryTypeBits, req.size, dev.owns && dev.queue, false).mapped;
  EXPECT_EQ(own->staged, dev.options.staged_memory || by_layout);
  std::vector<uint8_t> data(kBytes);
  for (size_t i = 0; i < kBytes; ++i) data[i] = uint8_t(i * 2654435761u >> 24);
  b.upload(data.data(), kBytes);
  std::vector<uint8_t> got(kBytes, 0);
  b.download(got.data(), kBytes);
  EXPECT_TRUE(got == data);
  // A part that crosses the first piece's end, at odd offsets both ways.
  const size_t at = (size_t(64) << 20) - 33, n = 101;
  std::vector<uint8_t> patch(n, 0xa5);
  b.upload(patch.data(), n, at);
  std::copy(patch.begin(), patch.end(), data.begin() + long(at));
  std::vector<uint8_t> part(n + 10);
  b.download(part.data(), part.size(), at - 5);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + long(at - 5)));
  b.download(got.data(), kBytes);
  EXPECT_TRUE(got == data);
  // Moved from, a Buffer is empty: no handle, no size.
  Buffer moved = std::move(b);
  EXPECT_EQ(moved.size(), kBytes);
  EXPECT_EQ(b.handle(), VK_NULL_HANDLE);
  EXPECT_EQ(b.size(), 0u);
  expect_gmm_works(ctx());  // a gmm on the same context's buffers (staged in the .staged runs)
}

// Staged copies reuse the Context's staging buffer: one is made for the first copy and kept, a larger
// copy replaces it with a larger one, and later copies of either size take that one. Every copy is
// byte for byte.
TEST_F(DeviceTest, StagedCopiesReuseOneStagingBuffer) {
  const char* forced = std::getenv("VKGMM_STAGED_MEMORY");
  const std::string before = forced ? forced : "";
  setenv("VKGMM_STAGED_MEMORY", "1", 1);
  Context c = make_context({});
  if (forced) setenv("VKGMM_STAGED_MEMORY", before.c_str(), 1);
  else unsetenv("VKGMM_STAGED_MEMORY");
  StagingCache& cache = ContextInternals::of(c).staging;
  const size_t small = size_t(3) << 20, large = size_t(9) << 20;
  Buffer a = c.create_buffer(small), b = c.create_buffer(large);
  ASSERT_TRUE(ContextInternals::of(c).buffers.find(a.handle())->staged);
  auto round_trip = [](Buffer& buffer, size_t bytes, uint8_t seed) {
    std::vector<uint8_t> data(bytes), got(bytes);
    for (size_t i = 0; i < bytes; ++i) data[i] = uint8_t(i * 2654435761u >> 24) ^ seed;
    buffer.upload(data.data(), bytes);
    buffer.download(got.data(), bytes);
    EXPECT_TRUE(got == data) << "seed " << int(seed);
  };
  EXPECT_EQ(cache.kept().buffer, VK_NULL_HANDLE);
  round_trip(a, small, 1);
  const StagingBuffer first = cache.kept();
  ASSERT_NE(first.buffer, VK_NULL_HANDLE);
  EXPECT_GE(first.bytes, small);
  round_trip(a, small, 2);
  EXPECT_EQ(cache.made(), 1u);  // four copies, one staging buffer
  EXPECT_EQ(cache.kept().buffer, first.buffer);
  round_trip(b, large, 3);
  const StagingBuffer second = cache.kept();
  EXPECT_GE(second.bytes, large);
  round_trip(a, small, 4);
  round_trip(b, large, 5);
  EXPECT_EQ(cache.made(), 2u);
  EXPECT_EQ(cache.kept().buffer, second.buffer);
  EXPECT_EQ(cache.kept().bytes, second.bytes);
}

// 10,000 calls: a reused plan (record + submit), plans made and dropped, the tgmm and gmm conveniences.
// Host memory (RSS, which on lavapipe is device memory too) and vkgmm's device allocations stay flat.
TEST_F(DeviceTest, TenThousandCallsKeepMemoryFlat) {
  Context& c = ctx();
  std::mt19937 rng(5);
  GmmProblem gp = small_gmm();
  TgmmProblem tp;
  tp.m = 24, tp.k = 8, tp.n = 8, tp.group_sizes = {5, 0, 19};
  const auto gl = random_values(size_t(gp.m) * gp.k, DType::f32, rng);
  const auto gr = random_values(3 * size_t(gp.k) * gp.n, DType::f32, rng);
  const auto tl = random_values(size_t(tp.k) * tp.m, DType::f32, rng);
  const auto tr = random_values(size_t(tp.m) * tp.n, DType::f32, rng);
  const auto gwant = reference::gmm(gp, gl, gr);
  const auto twant = reference::tgmm(tp, tl, tr);

  GmmPlan plan(c, gp);
  Buffer lhs = c.create_buffer(plan.sizes().lhs), rhs = c.create_buffer(plan.sizes().rhs);
  Buffer out = c.create_buffer(plan.sizes().out);
  lhs.upload(gl.data(), gl.size() * 4);
  rhs.upload(gr.data(), gr.size() * 4);
  const GmmOperands ops{lhs.view(), rhs.view(), out.view(), {}};

  auto call = [&](int i) {
    switch (i % 4) {
      case 0:
      case 2:
        c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
        break;
      case 1: {
        GmmPlan fresh(c, gp);  // a plan made and dropped: its metadata buffer comes and goes
        c.submit_and_wait([&](VkCommandBuffer cb) { fresh.record(cb, ops); });
        break;
      }
      case 3: {
        // The tgmm convenience on buffers made and dropped each time.
        Buffer l = c.create_buffer(tl.size() * 4), r = c.create_buffer(tr.size() * 4);
        Buffer o = c.create_buffer(twant.size() * 4);
        l.upload(tl.data(), tl.size() * 4);
        r.upload(tr.data(), tr.size() * 4);
        tgmm(c, tp, {l.view(), r.view(), o.view(), {}});
        if (i % 1000 == 3) {
          std::vector<float> got(twant.size());
          o.download(got.data(), got.size() * 4);
          EXPECT_TRUE(all_close(got, twant, 1e-3, 1e-5)) << "call " << i;
        }
        break;
      }
    }
  };

  // Warm-up: pipelines, the driver's and the validation layer's tables, the allocator's pools.
  for (int i = 0; i < 400; ++i) call(i);
  const uint64_t rss0 = rss_bytes();
  const int64_t allocations0 = ContextInternals::of(c).buffers.live_allocations();
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kCalls = 10000;
  for (int i = 0; i < kCalls; ++i) call(i);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t rss1 = rss_bytes();

  std::vector<float> got(gwant.size());
  out.download(got.data(), got.size() * 4);
  EXPECT_TRUE(all_close(got, gwant, 1e-3, 1e-5));
  EXPECT_EQ(ContextInternals::of(c).buffers.live_allocations(), allocations0);
  const double growth_mib = (double(rss1) - double(rss0)) / (1 << 20);
  std::printf("%d calls in %.1f s; RSS %.1f MiB -> %.1f MiB (%+.2f MiB); %lld live allocations\n", kCalls, seconds,
              rss0 / 1048576.0, rss1 / 1048576.0, growth_mib, static_cast<long long>(allocations0));
  if (kRssIsMeaningful) EXPECT_LT(growth_mib, 16.0) << "host memory grew over " << kCalls << " calls";
}

// With validation on, vkDestroyDevice lists every object left alive. A Context that ran each op (and
// refused bad input, and survived an injected fault) must leave none, and the report must not be lost.
TEST(Teardown, EveryVulkanObjectIsDestroyed) {
  take_teardown_messages();
  {
    ContextOptions o;
    o.validate = true;
    Context c(o);
    std::mt19937 rng(2);
    GmmProblem p = small_gmm();
    auto l = random_values(size_t(p.m) * p.k, DType::f32, rng);
    auto r = random_values(3 * size_t(p.k) * p.n, DType::f32, rng);
    run_gmm(c, p, l, r);
    TgmmProblem tp;
    tp.m = 24, tp.k = 8, tp.n = 8, tp.group_sizes = {5, 0, 19};
    run_tgmm(c, tp, l, random_values(size_t(tp.m) * tp.n, DType::f32, rng));
    run_backward(c, p, l, r, random_values(size_t(p.m) * p.n, DType::f32, rng));
    p.group_sizes = {-1};
    EXPECT_THROW(GmmPlan(c, p), Error);
    ContextInternals::of(c).submitter.faults.arm(FaultPoint::wait, VK_TIMEOUT);
    EXPECT_THROW(run_gmm(c, small_gmm(), l, r), Error);
    EXPECT_TRUE(c.take_validation_messages().empty());
  }
  const auto messages = take_teardown_messages();
  for (const auto& m : messages) ADD_FAILURE() << "at teardown: " << m;
}

// The check above can fail: an object leaked on purpose is reported at teardown, and echoed to stderr.
// The echo is captured here, so that the suite's log shows no leak report of this test's own making
// (a reader of the log would take it for a leak of vkgmm's).
TEST(Teardown, LeakedObjectIsReported) {
  take_teardown_messages();
  ::testing::internal::CaptureStderr();
  {
    ContextOptions o;
    o.validate = true;
    Context c(o);
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence = VK_NULL_HANDLE;
    EXPECT_EQ(vkCreateFence(c.device(), &fi, nullptr, &fence), VK_SUCCESS);  // never destroyed
  }
  const std::string echoed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(echoed.find("at Context teardown"), std::string::npos) << echoed;
  const auto messages = take_teardown_messages();
  ASSERT_FALSE(messages.empty()) << "the leaked VkFence was not reported";
  bool names_fence = false;
  for (const auto& m : messages) names_fence |= m.find("VkFence") != std::string::npos;
  EXPECT_TRUE(names_fence) << messages.front();
}

}  // namespace
}  // namespace vkgmm::test
