// The texel-view read path: on CPU devices (lavapipe here; GPUs keep storage buffers) vkgmm's own
// buffers are read through uniform texel buffers; the switch, odd offsets and operands a view cannot cover fall back or
// read single elements, and every result still matches the reference. Which plans read through views is
// taken from the device (reads_texel_views): on a GPU every case here runs on storage buffers and expects so.
#include <array>
#include <cstring>

#include "context_impl.hpp"
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

// The formats are mandatory for uniform texel buffers in Vulkan, so every device must report them.
TEST_F(DeviceTest, TexelFormatsAreReported) {
  EXPECT_TRUE(ctx().info().texel_loads_32bit);
  EXPECT_TRUE(ctx().info().texel_loads_16bit);
  EXPECT_GE(ctx().info().max_texel_buffer_elements, 65536u);
}

// gmm and tgmm on vkgmm buffers take the texel path (f32 and bf16 inputs), at an element offset that is
// a multiple of 4 (vector texel loads) and one that is not (single elements out of texels).
TEST_F(DeviceTest, TexelLoadsOnOwnBuffersMatchReference) {
  // The same cases on storage-buffer loads (tgmm's lhs [k, m] peels to alignment on either path).
  for (bool texel : {true, false}) {
    ContextOptions options;
    options.texel_loads = texel;
    Context c = make_context(options);
  for (DType t : {DType::f32, DType::bf16})
    for (size_t lead : {0, 4, 3}) {
      std::mt19937 rng(5 + unsigned(lead));
      GmmProblem p;
      p.m = 48;  // a multiple of 4: tgmm reads lhs [k, m] 4 rows at a time where the offset allows
      p.k = 24;
      p.n = 36;
      p.group_sizes = make_group_sizes(Sizes::empty_ends, 5, p.m, rng);
      p.lhs_type = p.rhs_type = p.out_type = t;
      const auto lhs = random_values(size_t(p.m) * p.k, t, rng);
      const auto rhs = random_values(size_t(5) * p.k * p.n, t, rng);
      const size_t es = dtype_size(t);
      // lhs at `lead` elements into its buffer; rhs at `lead` elements after lhs in the same buffer. The
      // views run to the next operand or the end (16-bit views cover whole words), and 16 spare bytes
      // keep rhs's last texel whole.
      Buffer in = c.create_buffer((2 * lead + lhs.size() + rhs.size()) * es + 16);
      in.upload(encode(t, lhs).data(), lhs.size() * es, lead * es);
      const size_t rhs_at = (2 * lead + lhs.size()) * es;
      in.upload(encode(t, rhs).data(), rhs.size() * es, rhs_at);
      Buffer out = c.create_buffer(size_t(p.m) * p.n * es);
      const GmmOperands ops{in.view(lead * es, rhs_at - lead * es), in.view(rhs_at, in.size() - rhs_at), out.view(), {}};
      GmmPlan plan(c, p);
      EXPECT_EQ(plan.texel_loads(ops), reads_texel_views(c, t != DType::f32)) << dtype_name(t) << " lead " << lead;
      c.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
      std::vector<uint8_t> raw(out.size());
      out.download(raw.data(), raw.size());
      const std::vector<float> got = decode(t, raw.data(), size_t(p.m) * p.n);
      const Tolerance tol = tolerance_for(t, t, t);
      EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs), tol.atol, tol.rtol))
          << dtype_name(t) << " lead " << lead;

      // tgmm: lhs [k, m] and rhs [m, n] from the same buffer, same offsets.
      TgmmProblem q;
      q.m = p.m;
      q.k = p.k;
      q.n = p.n;
      q.group_sizes = p.group_sizes;
      q.lhs_type = q.rhs_type = q.out_type = t;
      const auto tl = random_values(size_t(q.k) * q.m, t, rng);
      const auto tr = random_values(size_t(q.m) * q.n, t, rng);
      Buffer tin = c.create_buffer((2 * lead + tl.size() + tr.size()) * es + 16);
      tin.upload(encode(t, tl).data(), tl.size() * es, lead * es);
      const size_t tr_at = (2 * lead + tl.size()) * es;
      tin.upload(encode(t, tr).data(), tr.size() * es, tr_at);
      Buffer tout = c.create_buffer(size_t(5) * q.k * q.n * es);
      const TgmmOperands tops{tin.view(lead * es, tr_at - lead * es), tin.view(tr_at, tin.size() - tr_at), tout.view(), {}};
      TgmmPlan tplan(c, q);
      EXPECT_EQ(tplan.texel_loads(tops), reads_texel_views(c, t != DType::f32)) << dtype_name(t) << " lead " << lead;
      c.submit_and_wait([&](VkCommandBuffer cb) { tplan.record(cb, tops); });
      std::vector<uint8_t> traw(tout.size());
      tout.download(traw.data(), traw.size());
      const std::vector<float> tgot = decode(t, traw.data(), size_t(5) * q.k * q.n);
      EXPECT_TRUE(all_close(tgot, reference::tgmm(q, tl, tr), tol.atol, tol.rtol)) << dtype_name(t) << " lead " << lead;
    }
  }
}

// A bf16 lhs of 18 bytes, ending inside an 8-byte texel: vkgmm's own buffer is padded to whole texels,
// so its view holds the last one and the plan reads lhs through it; an app's buffer borrowed at 20 bytes
// has views of whole texels only (16 bytes), so the plan reads that lhs as a storage buffer. The same
// result either way.
TEST_F(DeviceTest, OperandEndingInsideATexel) {
  std::mt19937 rng(8);
  GmmProblem p;
  p.m = 3;
  p.k = 3;
  p.n = 5;
  p.group_sizes = {1, 2};
  p.lhs_type = p.rhs_type = DType::bf16;
  const auto lhs = random_values(9, DType::bf16, rng);  // 18 bytes: 2 whole 8-byte texels and a part
  const auto rhs = random_values(30, DType::bf16, rng);
  const auto want = reference::gmm(p, lhs, rhs);
  std::vector<uint8_t> lhs_bytes = encode(DType::bf16, lhs);
  lhs_bytes.resize(20);  // the word holding the last element whole (the packed build reads words)
  AppBuffer app(ctx(), lhs_bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT);
  const bool views = reads_texel_views(ctx(), true);
  for (bool borrowed : {false, true}) {
    // Borrowed at 20 bytes: its views hold 2 whole 8-byte texels, not the third, which lhs ends in.
    Buffer a = borrowed ? ctx().borrow_buffer(app.buffer, 20) : ctx().create_buffer(18);
    Buffer b = ctx().create_buffer(60), out = ctx().create_buffer(60);
    if (!borrowed) a.upload(lhs_bytes.data(), 18);
    b.upload(encode(DType::bf16, rhs).data(), 60);
    const GmmOperands ops{a.view(0, 18), b.view(), out.view(), {}};
    GmmPlan plan(ctx(), p);
    EXPECT_EQ(plan.texel_loads(ops), views && !borrowed) << "borrowed " << borrowed;
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
    std::vector<float> got(15);
    out.download(got.data(), 60);
    EXPECT_TRUE(all_close(got, want, 1e-3, 1e-2)) << "borrowed " << borrowed;
  }
}

// ContextOptions::texel_loads = false (default: not $VKGMM_DISABLE_TEXEL, how the suite tests that path
// here) makes the context's plans read storage buffers.
TEST_F(DeviceTest, TexelSwitchForcesStorageBuffers) {
  GmmProblem p;
  p.m = 16;
  p.k = 8;
  p.n = 8;
  p.group_sizes = {10, 6};
  for (bool texel : {false, true}) {
    ContextOptions options;
    options.texel_loads = texel;
    Context c = make_context(options);
    EXPECT_EQ(*c.options().texel_loads, texel);
    Buffer lhs = c.create_buffer(16 * 8 * 4), rhs = c.create_buffer(2 * 8 * 8 * 4), out = c.create_buffer(16 * 8 * 4);
    const GmmOperands ops{lhs.view(), rhs.view(), out.view(), {}};
    GmmPlan plan(c, p);
    EXPECT_EQ(plan.texel_loads(ops), reads_texel_views(c));
    expect_gmm_matches_reference(c, p, 3);
  }
}

// An app's own VkBuffers, borrowed (Context::borrow_buffer): read through texel views like vkgmm's own
// buffers, views checked exactly against the declared size, no host mapping, one borrower at a time;
// destroying the borrowed Buffer leaves the app's VkBuffer to the app.
TEST_F(DeviceTest, BorrowedAppBuffersTakeTheTexelPath) {
  std::mt19937 rng(21);
  GmmProblem p;
  p.m = 24;
  p.k = 16;
  p.n = 12;
  p.group_sizes = {10, 0, 14};
  const auto lhs = random_values(size_t(p.m) * p.k, DType::f32, rng);
  const auto rhs = random_values(3 * size_t(p.k) * p.n, DType::f32, rng);
  const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
  AppBuffer l(ctx(), encode(DType::f32, lhs), usage), r(ctx(), encode(DType::f32, rhs), usage),
      o(ctx(), std::vector<uint8_t>(size_t(p.m) * p.n * 4, 0), usage);
  for (bool borrowed : {false, true}) {
    std::memset(o.mapped, Guarded::kPoison, size_t(p.m) * p.n * 4);  // the last run's result is no answer
    Buffer bl, br, bo;
    if (borrowed) {
      bl = ctx().borrow_buffer(l.buffer, lhs.size() * 4);
      br = ctx().borrow_buffer(r.buffer, rhs.size() * 4);
      bo = ctx().borrow_buffer(o.buffer, size_t(p.m) * p.n * 4);
      EXPECT_EQ(bl.handle(), l.buffer);
    }
    const GmmOperands ops{{l.buffer, 0, lhs.size() * 4}, {r.buffer, 0, rhs.size() * 4}, {o.buffer, 0, size_t(p.m) * p.n * 4}, {}};
    GmmPlan plan(ctx(), p);
    EXPECT_EQ(plan.texel_loads(ops), borrowed && reads_texel_views(ctx()));
    ctx().submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
    std::vector<float> got(size_t(p.m) * p.n);
    std::memcpy(got.data(), o.mapped, got.size() * 4);
    EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs), 1e-3, 1e-5)) << "borrowed " << borrowed;
    if (!borrowed) continue;
    // Exact bounds: a view one byte past the declared size is refused.
    GmmOperands past = ops;
    past.out.size += 4;
    try {
      plan.check(past);
      ADD_FAILURE() << "a view past a borrowed buffer's size was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("runs past the end"), std::string::npos) << e.what();
    }
    float x = 0;
    EXPECT_THROW(bl.upload(&x, 4), Error);
    EXPECT_THROW(bl.download(&x, 4), Error);
    EXPECT_THROW(ctx().borrow_buffer(l.buffer, 4), Error);
    EXPECT_THROW(ctx().borrow_buffer(VK_NULL_HANDLE, 4), Error);
  }
  // A size past what the buffer can hold is refused (its memory requirement bounds it).
  EXPECT_THROW(ctx().borrow_buffer(r.buffer, (uint64_t(1) << 40)), Error);
  // Borrowed again after the first borrower is gone (its views were destroyed, the VkBuffer is intact).
  Buffer again = ctx().borrow_buffer(l.buffer, lhs.size() * 4, false);
  EXPECT_EQ(again.size(), lhs.size() * 4);
}

// ContextOptions::eager_pipelines: a plan compiles every pipeline its record() can bind when it is made,
// so records of vkgmm's buffers and of an app's (storage-buffer build), at offsets that turn the 4-element
// loads and stores off, compile nothing; off, the plan compiles one pipeline and a record compiles the
// variant its buffers or offsets need once.
TEST_F(DeviceTest, EagerPlansRecordWithoutCompiling) {
  std::mt19937 rng(22);
  GmmProblem g;
  g.m = 24, g.k = 16, g.n = 12;
  g.group_sizes = {10, 0, 14};
  TgmmProblem t;
  t.m = 24, t.k = 16, t.n = 12;
  t.group_sizes = {10, 0, 14};
  const auto lhs = random_values(size_t(g.m) * g.k, DType::f32, rng);
  const auto rhs = random_values(3 * size_t(g.k) * g.n, DType::f32, rng);
  const auto t_rhs = random_values(size_t(t.m) * t.n, DType::f32, rng);
  const std::vector<float> want_g = reference::gmm(g, lhs, rhs), want_t = reference::tgmm(t, lhs, t_rhs);
  const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  constexpr size_t kSlack = 16;  // elements before each operand, for its offset
  for (const bool eager : {true, false}) {
    SCOPED_TRACE(eager ? "eager" : "lazy");
    ContextOptions o;
    o.eager_pipelines = eager;
    Context c = make_context(o);
    EXPECT_EQ(c.options().eager_pipelines, eager);
    const GmmPlan gmm_plan(c, g);
    const TgmmPlan tgmm_plan(c, t);
    const size_t planned = ContextInternals::of(c).pipelines.size();
    size_t compiled_by_records = 0;
    // lhs, rhs and out at these element offsets, in vkgmm's buffers (texel views where the device reads
    // them) or in an app's VkBuffers (storage buffers).
    for (const bool app : {false, true}) {
      for (const std::array<size_t, 3> at : {std::array<size_t, 3>{0, 0, 0}, {1, 0, 0}, {0, 2, 0}, {0, 0, 3}, {5, 6, 7}}) {
        for (const bool is_gmm : {true, false}) {
          SCOPED_TRACE(std::string(app ? "app" : "own") + (is_gmm ? " gmm" : " tgmm") + " offsets " +
                       std::to_string(at[0]) + "," + std::to_string(at[1]) + "," + std::to_string(at[2]));
          const std::vector<float>& b_values = is_gmm ? rhs : t_rhs;
          const std::vector<float>& want = is_gmm ? want_g : want_t;
          auto padded = [&](const std::vector<float>& v, size_t at_element) {
            std::vector<float> x(kSlack + v.size() + kSlack, 0.f);
            std::copy(v.begin(), v.end(), x.begin() + at_element);
            return encode(DType::f32, x);
          };
          const std::vector<uint8_t> a_bytes = padded(lhs, at[0]), b_bytes = padded(b_values, at[1]),
                                     o_bytes = padded(std::vector<float>(want.size(), 0.f), at[2]);
          AppBuffer la(c, a_bytes, usage), ra(c, b_bytes, usage), oa(c, o_bytes, usage);
          Buffer lo = c.create_buffer(a_bytes.size()), ro = c.create_buffer(b_bytes.size()),
                 oo = c.create_buffer(o_bytes.size());
          lo.upload(a_bytes.data(), a_bytes.size());
          ro.upload(b_bytes.data(), b_bytes.size());
          oo.upload(o_bytes.data(), o_bytes.size());
          const BufferView l{app ? la.buffer : lo.handle(), at[0] * 4, lhs.size() * 4},
              r{app ? ra.buffer : ro.handle(), at[1] * 4, b_values.size() * 4},
              out{app ? oa.buffer : oo.handle(), at[2] * 4, want.size() * 4};
          const size_t before = ContextInternals::of(c).pipelines.size();
          c.submit_and_wait([&](VkCommandBuffer cb) {
            if (is_gmm) gmm_plan.record(cb, GmmOperands{l, r, out, {}});
            else tgmm_plan.record(cb, TgmmOperands{l, r, out, {}});
          });
          compiled_by_records += ContextInternals::of(c).pipelines.size() - before;
          std::vector<float> got(want.size());
          if (app) std::memcpy(got.data(), static_cast<const char*>(oa.mapped) + at[2] * 4, got.size() * 4);
          else oo.download(got.data(), got.size() * 4, at[2] * 4);
          EXPECT_TRUE(all_close(got, want, 1e-3, 1e-5));
        }
      }
    }
    if (eager) EXPECT_EQ(compiled_by_records, 0u) << "records compiled pipelines an eager plan had not";
    else EXPECT_EQ(planned, 2u) << "a lazy plan compiles its one planned pipeline";
    if (eager) EXPECT_GE(planned, 2u);
    // The count sees compiles: a lazy plan's records of an app's buffers compile the storage build.
    if (!eager && reads_texel_views(c)) EXPECT_GT(compiled_by_records, 0u);
  }
}

}  // namespace
}  // namespace vkgmm::test
