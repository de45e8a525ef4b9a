// `vkgmm bench`: check each workload against the CPU reference, then time it and its baselines.
#include "bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "args.hpp"
#include "baselines.hpp"
#include "check.hpp"
#include "eviction.hpp"
#include "fail.hpp"
#include "layer.hpp"
#include "report.hpp"
#include "routed.hpp"
#include "routed_grad.hpp"
#include "runner.hpp"
#include "timing.hpp"
#include "train.hpp"
#include "tuning.hpp"
#include "vkgmm/context.hpp"
#include "probe.hpp"

namespace bench {
namespace {

// Errors are reported as "vkgmm bench: error: ...".
constexpr char kProgram[] = "vkgmm bench";

// A wrong result: the workload is refused, and nothing of the run is reported.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void progress(const char* fmt, ...) {
  std::va_list args;
  va_start(args, fmt);
  std::fputs("vkgmm bench: ", stderr);
  std::vfprintf(stderr, fmt, args);
  std::fputc('\n', stderr);
  va_end(args);
}

// The progress line that starts a workload: its name, shape and what happens next.
void announce(const Workload& w, const char* what) {
  progress("[%s] %s m=%lld k=%lld n=%lld groups=%lld %s: %s", w.name.c_str(), op_name(w.op), (long long)w.m,
           (long long)w.k, (long long)w.n, (long long)w.groups, vkgmm::dtype_name(w.dtype), what);
}

// `rate` over the roof `roof` measured for it; NaN, with a probe failure in r, where the rate is above
// the roof: every timed call starts from evicted caches, so a call faster than the probe means the probe
// did not saturate the device, and a fraction over 100 % would be read as a figure. `cache_can_beat`: the
// call's bytes count some twice that the cache may serve the second time (a model layer's intermediate
// slots, written by gate/up and read by down), so above the roof is a figure there, not a failure.
double roof_fraction(Result& r, double rate, double roof, const char* what, const char* unit,
                     bool cache_can_beat = false) {
  if (roof <= 0) return 0;
  const double fraction = rate / roof;
  if (fraction <= 1.0 || cache_can_beat) return fraction;
  char text[160];
  std::snprintf(text, sizeof text, "%s probe: %.2f %s, below this call's %.2f %s", what, roof, unit, rate, unit);
  r.probe_failures.push_back(text);
  return std::nan("");
}

// $VKGMM_BENCH_ROOF_SCALE (test-only), 1 where unset; a value that is not a positive number is refused by name.
double roof_scale_from_environment() {
  const char* text = std::getenv("VKGMM_BENCH_ROOF_SCALE");
  if (!text) return 1.0;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(s > 0) || !std::isfinite(s))
    throw std::invalid_argument(std::string("VKGMM_BENCH_ROOF_SCALE is '") + text + "': a positive number");
  return s;
}

// GFLOP/s, GB/s and their fractions of the device's ceilings, from r's median gpu ms.
void set_rates(Result& r, const RunInfo& run) {
  r.gflops = result_flops(r) / (r.time.gpu_ms_median * 1e6);
  r.gbps = result_bytes(r) / (r.time.gpu_ms_median * 1e6);
  r.probe_failures.clear();
  r.ceiling_fraction = roof_fraction(r, r.gflops, run.ceilings.fma_gflops, "the FMA ceiling", "GFLOP/s");
  // The memory roof: the bytes over the streaming read's bandwidth, measured as the device reads at best
  // (vkgmm::measure_ceilings), so that it means the same on every device.
  r.read_fraction = roof_fraction(r, r.gbps, run.ceilings.read_gbps, "the streaming read", "GB/s", r.layer.has_value());
  // The copy of the call's own bytes timed alternately with it when there is one (the same machine load
  // on both sides of the ratio); the best-case bandwidth of `vkgmm info` otherwise.
  if (r.copy_ms) r.copy_fraction = *r.copy_ms / r.time.gpu_ms_median;
  else r.copy_fraction = run.ceilings.copy_gbps > 0 ? r.gbps / run.ceilings.copy_gbps : 0;
}

// The copy a call is measured against: vkCmdCopyBuffer moving the call's bytes (half of them read, half
// written, as the bandwidth counts them), appended to `calls` to be timed alternately with the call.
std::unique_ptr<vkgmm::BufferCopy> add_copy_call(vkgmm::Context& ctx, const Result& r, std::vector<Call>& calls) {
  const uint64_t half = static_cast<uint64_t>(result_bytes(r) / 2);
  auto copy = std::make_unique<vkgmm::BufferCopy>(ctx, std::min<uint64_t>(half, 64ull << 20));
  calls.push_back({[] {}, [c = copy.get(), half](VkCommandBuffer cb) { c->record(cb, half); }});
  return copy;
}

// A block-format workload's peer: the same shape, routing and activations with unquantized weights (of
// the activations' type, [G, k, n]) — what the block formats' speed targets compare against.
Workload unquantized_peer(const Workload& w) {
  Workload p = w;
  p.rhs_format.reset();
  p.name = w.name + " peer";
  return p;
}

// One untimed call of the current plans; its outputs must match the reference (and the device path's
// status word be clean: the host path never writes it) or the workload is refused.
void check_or_refuse(GpuTimer& timer, Instance& inst, const std::vector<Output>& want, const std::string& what) {
  // Each check after its own call only: the host path's check left the right answer in the outputs, which
  // a device-sizes, persistent-grid or swept call that wrote nothing would pass.
  inst.poison_outputs();
  timer.run_ms([&](VkCommandBuffer cb) { inst.record(cb); });
  if (const uint32_t status = inst.device_status())
    throw Refused("workload '" + inst.work.name + "' (" + what + "): device status word " + std::to_string(status) +
                  " for valid group sizes; refusing to time it");
  std::vector<Output> got = inst.download();
  if (perturb_if_asked(got)) progress("[%s] VKGMM_BENCH_PERTURB=1: changed one element of %s", inst.work.name.c_str(),
                                      got[0].name.c_str());
  if (auto diff = compare(got, want, inst.work.dtype))
    throw Refused("workload '" + inst.work.name + "' (" + what + "): the result differs from the CPU reference: " +
                  *diff + "; refusing to time a wrong kernel");
}

std::vector<Output> reference_for(const Instance& inst) {
  const tool::Stopwatch clock;
  std::vector<Output> want = expected_outputs(inst);
  progress("[%s] CPU reference computed in %.1f s", inst.work.name.c_str(), clock.seconds());
  return want;
}

vkgmm::TilingChoice choose_tiling(const Options& o, const Workload& w, const std::filesystem::path& cache,
                                  std::vector<std::string>& notes) {
  switch (o.tiling_mode) {
    case TilingMode::library: return vkgmm::TilingChoice::automatic();
    case TilingMode::fixed: return vkgmm::TilingChoice::of(o.tiling);
    case TilingMode::cached:
      if (auto t = cached_tiling(cache, w)) {
        notes.push_back("tiling " + tiling_text(*t) + " from the sweep cache " + cache.string());
        return vkgmm::TilingChoice::of(*t);
      }
      notes.push_back("no cached tiling for this shape (run --sweep-tiling): the library's choice");
      return vkgmm::TilingChoice::automatic();
  }
  return vkgmm::TilingChoice::automatic();
}

// Timed calls per measurement: --reps, or without it at least 5 and enough for ~0.25 s of device time
// (up to 100): a median of 5 two-millisecond calls moves with every hiccup of a shared machine. Each call
// also waits for its eviction (lavapipe: a read of 1.25 GiB of host memory, tens of ms): no more than fit
// in ~2 s with it, which keeps a short call's samples from costing a minute per kind of call.
int reps_for(const Options& o, double call_ms, const CallTimer& clock) {
  if (o.reps_given || !(call_ms > 0)) return o.reps;
  const double most = std::clamp(std::floor(2000.0 / (call_ms + clock.eviction_ms())), double(o.reps), 100.0);
  return static_cast<int>(std::clamp(std::ceil(250.0 / call_ms), double(o.reps), most));
}

// A device baseline: one call checked against `want` (a disagreement becomes a note naming `label`,
// and no time), then the median device ms of `reps` timed calls. The naive loop's outputs are not
// poisoned first: they are its own, fresh and zero-filled, and it writes no rows of an empty group,
// whose zeros are part of the answer.
std::optional<double> time_checked(CallTimer& clock, int reps, int warmup, const std::string& label,
                                   const std::function<void(VkCommandBuffer)>& record,
                                   const std::function<std::vector<Output>()>& download,
                                   const std::vector<Output>& want, vkgmm::DType dtype,
                                   std::vector<std::string>& notes) {
  clock.timer().run_ms(record);
  if (auto diff = compare(download(), want, dtype)) {
    notes.push_back(label + " differs from the reference (" + *diff + "): not reported");
    return std::nullopt;
  }
  return median(clock.time(reps, warmup, [] {}, record).gpu_ms);
}

// The grid every plan of the run asks for (--grid; with both, the per-visit one: measure() adds the
// persistent twins).
vkgmm::Grid run_grid(const Options& o) {
  return o.workgroups == WorkgroupGrid::persistent ? vkgmm::Grid::persistent
         : o.workgroups == WorkgroupGrid::automatic ? vkgmm::Grid::automatic
                                                     : vkgmm::Grid::per_visit;
}

// The host path's call as the table times it, and as the sweep times each tiling: the workload's
// Instance on the run's grid, planned now, its plans rebuilt with `tiling` by every call (the host's
// share, timed apart from the device's). One function for both, so that the sweep's default tiling is
// the table's very call (same buffers, plans and operands: Instance::describe, compared by ctest).
Call host_call(Instance& inst, const Options& o, const vkgmm::TilingChoice& tiling) {
  inst.use_grid(run_grid(o));
  inst.plan(tiling);
  return {[&inst, tiling] { inst.plan(tiling); }, [&inst](VkCommandBuffer cb) { inst.record(cb); }};
}

// The calls and evictions a workload's measurement made (every timed call is preceded by one).
struct Counted {
  const CallTimer& clock;
  uint64_t calls0 = clock.calls(), evictions0 = clock.evictions();
  void into(uint64_t& calls, uint64_t& evictions) const {
    calls = clock.calls() - calls0;
    evictions = clock.evictions() - evictions0;
  }
};

Result measure(vkgmm::Context& ctx, CallTimer& clock, const Options& o, const Workload& w, const RunInfo& run,
               const std::filesystem::path& cache) {
  const char* name = w.name.c_str();
  GpuTimer& timer = clock.timer();
  const Counted counted{clock};
  announce(w, "preparing inputs");
  Result r;
  r.work = w;
  const vkgmm::TilingChoice tiling = choose_tiling(o, w, cache, r.notes);
  Instance inst(ctx, w, tiling);
  r.metadata = metadata_name(o.metadata);
  r.grid = grid_run_name(o.grid);
  r.workgroups = workgroup_grid_name(o.workgroups);
  // --grid: every call below asks for that grid (both: per visit, the persistent twins added last).
  const vkgmm::Grid base_grid = run_grid(o);
  const Call host = host_call(inst, o, tiling);
  r.tiling = inst.tiling_text();
  r.plan = inst.describe();
  const std::vector<Output> want = reference_for(inst);
  const auto record = [&](VkCommandBuffer cb) { inst.record(cb); };
  std::vector<Call> calls;  // the host path's calls, then the device path's; each rebuilds its plans
  bool device_grids = false;  // the device path timed on both grids (--device-grid both, where it has them)
  if (o.metadata != Metadata::device) {
    check_or_refuse(timer, inst, want, "tiling " + r.tiling);
    calls.push_back(host);
  }
  if (o.metadata != Metadata::host) {
    // The device path runs the tiling the host path's plans picked for these sizes (the automatic one
    // would size its tiles from an estimate of them), and their schedule (with a fixed tiling a GPU's
    // automatic one no longer follows the groups' rows): the ratio is the cost of building the metadata
    // on the device. A backward whose two plans differ cannot pass both: it keeps the choice, the
    // estimate's.
    const std::optional<vkgmm::Tiling> host_tiling = inst.single_tiling();
    const vkgmm::Schedule device_schedule = host_tiling ? inst.single_schedule() : vkgmm::Schedule::automatic;
    // Tile heights per group are the host path's only: the device path runs the first one for every group.
    const size_t heights = r.plan.find(" heights=");
    if (o.metadata != Metadata::device && heights != std::string::npos)
      r.notes.push_back("the host path took tile heights per group (" +
                        r.plan.substr(heights + 1, r.plan.find(' ', heights + 1) - heights - 1) +
                        "), the device path the first for every group: the device ratio counts that too");
    const vkgmm::TilingChoice device_tiling = host_tiling ? vkgmm::TilingChoice::of(*host_tiling) : tiling;
    inst.plan(device_tiling, true, device_schedule);
    const std::string ran = inst.tiling_text();
    if (ran != r.tiling)
      r.notes.push_back("the device path ran tiling " + ran + ", the host path's is " + r.tiling);
    (o.metadata == Metadata::device ? r.tiling : r.device_tiling) = ran;
    if (o.metadata == Metadata::device) r.plan = inst.describe();
    // A device path whose kernel reads the sizes itself has no metadata build, and so no grid to choose.
    device_grids = o.grid == GridRun::both && inst.workspace_bytes() > 0;
    if (o.grid == GridRun::both && !device_grids)
      r.notes.push_back("the device path's kernel reads the sizes itself (no metadata build): no device grids to compare");
    if (!device_grids) {
      check_or_refuse(timer, inst, want, "device metadata, tiling " + ran);
      calls.push_back({[&, device_tiling, device_schedule] { inst.plan(device_tiling, true, device_schedule); }, record});
    } else {
      // Both grids on one context (made with the indirect grid): the same call, its workspace one of the
      // bench's lent as an indirect buffer or not, so the two differ in the grid alone.
      inst.make_workspaces();
      for (const auto w : {Instance::Workspace::indirect, Instance::Workspace::not_indirect}) {
        inst.use_workspace(w);
        check_or_refuse(timer, inst, want,
                        std::string("device metadata, ") + (w == Instance::Workspace::indirect ? "indirect" : "upper-bound") +
                            " grid, tiling " + ran);
        calls.push_back({[&, device_tiling, device_schedule, w] {
                           inst.plan(device_tiling, true, device_schedule);
                           inst.use_workspace(w);
                         },
                         record});
      }
    }
  }
  const size_t per_visit_calls = calls.size();
  if (o.workgroups == WorkgroupGrid::both) {
    // Each path again on the persistent grid, checked before it is timed; the per-visit calls re-plan
    // with their grid, so the two kinds alternate.
    for (size_t i = 0; i < per_visit_calls; ++i) {
      const std::function<void()> prepare = calls[i].prepare;
      calls[i].prepare = [&inst, prepare] {
        inst.use_grid(vkgmm::Grid::per_visit);
        prepare();
      };
      calls.push_back({[&inst, prepare] {
                         inst.use_grid(vkgmm::Grid::persistent);
                         prepare();
                       },
                       record});
      calls.back().prepare();
      check_or_refuse(timer, inst, want, "persistent grid, tiling " + inst.tiling_text());
    }
  }
  // Alternating with them: the copy of the call's bytes, a block-format workload's unquantized peer
  // (checked against its own reference first) and the one-group baseline.
  const size_t copy_call = calls.size();
  const std::unique_ptr<vkgmm::BufferCopy> copy = add_copy_call(ctx, r, calls);
  // The peer runs as the call `time` reports: the same grid, and its group sizes where that call's are.
  const Workload pw = unquantized_peer(w);  // outlives `peer`, which refers to it
  std::unique_ptr<Instance> peer;
  std::optional<size_t> peer_call;
  if (w.quantized()) {
    std::vector<std::string> unused;
    const vkgmm::TilingChoice peer_tiling = choose_tiling(o, pw, cache, unused);
    const bool device_sizes = o.metadata == Metadata::device;
    try {
      peer = std::make_unique<Instance>(ctx, pw, peer_tiling);
      if (base_grid != vkgmm::Grid::automatic) peer->use_grid(base_grid);
      peer->plan(peer_tiling, device_sizes);
      check_or_refuse(timer, *peer, reference_for(*peer), "unquantized peer, tiling " + peer->tiling_text());
      peer_call = calls.size();
      calls.push_back({[&, peer_tiling, device_sizes] { peer->plan(peer_tiling, device_sizes); },
                       [&](VkCommandBuffer cb) { peer->record(cb); }});
    } catch (const vkgmm::Error& e) {  // e.g. unquantized weights past a binding's limit: no ratio
      peer.reset();
      r.notes.push_back(std::string("unquantized peer not run: ") + e.what());
    }
  }
  // The one-group baseline: the same m, k, n as a single group (its own inputs: one expert's weights
  // instead of G), timed like the grouped call (its host path, rebuilt per call, from evicted caches, in
  // the same rounds), with its own automatic tiling unless one was given on the command line (a tiling
  // the sweep cached for the grouped shape, decode's say, would not fit it).
  Workload dw = w;  // outlives `dense`, which refers to it
  dw.groups = 1;
  dw.empty_groups = 0;
  dw.group_sizes = {static_cast<int32_t>(w.m)};
  std::unique_ptr<Instance> dense;
  std::optional<size_t> dense_call;
  if (w.groups > 1) {
    progress("[%s] one-group baseline: the same shape as a single group", name);
    const vkgmm::TilingChoice dense_tiling =
        o.tiling_mode == TilingMode::fixed ? tiling : vkgmm::TilingChoice::automatic();
    try {
      dense = std::make_unique<Instance>(ctx, dw, dense_tiling);
      Call call = host_call(*dense, o, dense_tiling);
      dense->poison_outputs();
      timer.run_ms(call.record);
      if (auto diff = compare(dense->download(), reference_for(*dense), w.dtype)) {
        r.notes.push_back("one-group baseline differs from the reference (" + *diff + "): not reported");
      } else {
        r.one_group_tiling = dense->tiling_text();
        r.one_group_flops = flops(dw);
        dense_call = calls.size();
        calls.push_back(std::move(call));
      }
    } catch (const vkgmm::Error& e) {
      r.notes.push_back(std::string("one-group baseline not run: ") + e.what());
    }
  }
  host.prepare();
  const int reps = reps_for(o, timer.run_ms(record), clock);
  r.reps = reps;
  progress("[%s] matches the reference; timing %d reps after %d warmup (group sizes: %s), %zu kinds of call "
           "alternating", name, reps, o.warmup, r.metadata.c_str(), calls.size());

  const std::vector<Samples> s = clock.alternate(reps, o.warmup, calls);
  r.copy_ms = median(s[copy_call].gpu_ms);
  if (peer_call) r.peer_ms = median(s[*peer_call].gpu_ms);
  if (dense_call) r.one_group_ms = median(s[*dense_call].gpu_ms);
  // The host path's, the device path's (its indirect grid's with both), the upper-bound grid's.
  const bool device_only = o.metadata == Metadata::device;
  r.time = summarize(s.front());
  if (!device_only && per_visit_calls >= 2) r.device = summarize(s[1]);
  if (device_grids) r.bound_ms = median(s[per_visit_calls - 1].gpu_ms);
  if (o.workgroups == WorkgroupGrid::both) {
    // The persistent twins, in the order of the per-visit calls: the host path's (unless device only),
    // then the device path's.
    r.persistent_ms = median(s[per_visit_calls].gpu_ms);
    if (!device_only && per_visit_calls >= 2) r.device_persistent_ms = median(s[per_visit_calls + 1].gpu_ms);
    inst.use_grid(base_grid);
  }
  inst.use_workspace(Instance::Workspace::plans_own);
  // App-owned buffers: the host path's call on copies of the operands in VkBuffers of the bench's own
  // (in the memory type vkgmm's own get), lent with Context::borrow_buffer, against the same call on
  // vkgmm's buffers, alternately.
  progress("[%s] app buffers: the operands in app-owned VkBuffers, borrowed", name);
  inst.make_app_copies();
  r.app_memory_flags = inst.app_memory_flags();
  r.own_memory_flags = inst.own_memory_flags();
  inst.plan(tiling);
  inst.use_app_buffers(true);
  timer.run_ms(record);
  if (auto diff = compare(inst.download(), want, w.dtype)) {
    r.notes.push_back("app buffers differ from the reference (" + *diff + "): not reported");
  } else {
    const std::vector<Samples> own_app =
        clock.alternate(reps, o.warmup, {{[&] { inst.use_app_buffers(false); }, record},
                                         {[&] { inst.use_app_buffers(true); }, record}});
    r.app_ms = median(own_app[1].gpu_ms);
    r.app_ratio = *r.app_ms / median(own_app[0].gpu_ms);
  }
  inst.use_app_buffers(false);
  set_rates(r, run);

  // Baselines: each checked against the same reference, so a ratio never flatters a wrong answer.
  if (const std::string why = NaiveLoop::unsupported_reason(w, ctx.info()); !why.empty()) {
    r.notes.push_back("naive baseline not run: " + why);
  } else {
    progress("[%s] naive baseline: one dispatch per group", name);
    NaiveLoop naive(inst, tiling);
    r.naive_ms = time_checked(
        clock, reps, o.warmup, "naive baseline", [&](VkCommandBuffer cb) { naive.record(cb); },
        [&] { return naive.download(); }, want, w.dtype, r.notes);
  }
  if (run.openblas.empty()) {
    r.notes.push_back("OpenBLAS baseline not run: built without OpenBLAS");
  } else {
    progress("[%s] OpenBLAS baseline: cblas_sgemm per group", name);
    BlasLoop blas(inst);
    blas.run();
    if (auto diff = compare(blas.outputs(), want, w.dtype)) {
      r.notes.push_back("OpenBLAS baseline differs from the reference (" + *diff + "): not reported");
    } else {
      // From evicted host caches too, as the device calls start.
      r.openblas_ms = median(time_host(reps, o.warmup, [&] { blas.run(); }, [&] { clock.eviction().host(); }));
    }
  }
  counted.into(r.timed_calls, r.evictions);
  progress("[%s] gpu %.3f ms median, %.2f GFLOP/s", name, r.time.gpu_ms_median, r.gflops);
  if (r.device)
    progress("[%s] device path: gpu %.3f ms median, %.3f x the host path's", name, r.device->gpu_ms_median,
             r.device->gpu_ms_median / r.time.gpu_ms_median);
  return r;
}

// One untimed call of a routed path (`what`), checked against `want`: a wrong result (or a status word
// that is not 0) refuses the workload. `poison` fills what the call writes with NaN first: a call that
// wrote nothing would otherwise pass with what an earlier check left.
void check_routed_or_refuse(GpuTimer& timer, const Workload& w, const std::string& what,
                            const std::function<void()>& poison, const std::function<void(VkCommandBuffer)>& record,
                            const std::function<uint32_t()>& status,
                            const std::function<std::vector<Output>()>& download, const std::vector<Output>& want,
                            vkgmm::DType out_type = vkgmm::DType::f32, const char* perturb = "1") {
  poison();
  timer.run_ms(record);
  if (const uint32_t word = status())
    throw Refused("workload '" + w.name + "' (" + what + "): device status word " + std::to_string(word) +
                  " for valid ids; refusing to time it");
  std::vector<Output> got = download();
  if (perturb_if_asked(got, perturb))
    progress("[%s] VKGMM_BENCH_PERTURB=%s: changed one element of %s", w.name.c_str(), perturb, got[0].name.c_str());
  if (auto diff = compare(got, want, out_type))  // f32, but a model's per-slot gate/up result
    throw Refused("workload '" + w.name + "' (" + what + "): the result differs from the CPU reference: " + *diff +
                  "; refusing to time a wrong kernel");
}

// A workload routed by expert ids: vkgmm's routed gmm (combined, the main times; and per slot), the
// unfused chain and the sorted gemm alone, each checked against vkgmm::reference::gmm_routed, then timed
// alternately, one call of each per round.
Result measure_routed(vkgmm::Context& ctx, CallTimer& clock, const Options& o, const Workload& w, const RunInfo& run,
                      const std::filesystem::path& cache) {
  const char* name = w.name.c_str();
  GpuTimer& timer = clock.timer();
  const Counted counted{clock};
  progress("[%s] gmm routed by ids: T=%lld k=%lld n=%lld E=%lld top_k=%lld %s (%lld experts selected): preparing inputs",
           name, (long long)w.m, (long long)w.k, (long long)w.n, (long long)w.groups, (long long)w.top_k,
           vkgmm::dtype_name(w.dtype), (long long)distinct_experts(w));
  Result r;
  r.work = w;
  r.metadata = "ids";
  const vkgmm::TilingChoice tiling = choose_tiling(o, w, cache, r.notes);
  RoutedInstance inst(ctx, w, tiling, o.expert_shards);
  r.tiling = inst.tiling_text();
  r.expert_shards = inst.shards();
  if (inst.shards() > 1)
    r.notes.push_back("experts in " + std::to_string(inst.shards()) + " windows of " +
                      std::to_string(inst.experts_per_shard()) +
                      ": one call each, accumulating through existing_out (ids mode, chain and sorted gmm alike)");
  const tool::Stopwatch watch;
  const std::vector<Output> want = routed_reference(inst, true), want_slots = routed_reference(inst, false);
  progress("[%s] CPU references (combined, per slot) computed in %.1f s", name, watch.seconds());
  const auto record = [&](VkCommandBuffer cb) { inst.record(cb); };
  const auto status = [&] { return inst.device_status(); };
  const auto download = [&] { return inst.download(); };
  const auto poison = [&] { inst.poison_outputs(); };
  check_routed_or_refuse(timer, w, "ids, combined, tiling " + r.tiling, poison, record, status, download, want);
  inst.plan(tiling, false);
  if (inst.tiling_text() != r.tiling) r.notes.push_back("per slot, the plan ran tiling " + inst.tiling_text());
  check_routed_or_refuse(timer, w, "ids, per slot, tiling " + inst.tiling_text(), poison, record, status, download,
                         want_slots);
  std::vector<Call> calls = {{[&] { inst.plan(tiling, true); }, record}, {[&] { inst.plan(tiling, false); }, record}};
  std::unique_ptr<UnfusedChain> chain;
  if (const std::string why = UnfusedChain::unsupported_reason(w); !why.empty()) {
    r.notes.push_back("unfused chain not run: " + why);
  } else {
    progress("[%s] unfused chain: permute + gmm with device group sizes + un-permute/combine; sorted gmm", name);
    chain = std::make_unique<UnfusedChain>(inst, tiling);
    r.chain_tiling = chain->tiling_text();
    r.sorted_tiling = chain->sorted_tiling_text();
    check_routed_or_refuse(
        timer, w, "unfused chain, tiling " + r.chain_tiling, [&] { chain->poison_outputs(); },
        [&](VkCommandBuffer cb) { chain->record(cb); },
        [&] { return chain->device_status(); }, [&] { return chain->download(); }, want);
    check_routed_or_refuse(
        timer, w, "sorted gmm, tiling " + r.sorted_tiling, [&] { chain->poison_outputs(); },
        [&](VkCommandBuffer cb) { chain->record_sorted(cb); },
        [] { return 0u; }, [&] { return chain->download_sorted(); }, want_slots);
    calls.push_back({[&] { chain->plan(); }, [&](VkCommandBuffer cb) { chain->record(cb); }});
    calls.push_back({[&] { chain->plan_sorted(); }, [&](VkCommandBuffer cb) { chain->record_sorted(cb); }});
  }
  const size_t copy_call = calls.size();
  const std::unique_ptr<vkgmm::BufferCopy> copy = add_copy_call(ctx, r, calls);
  const Workload pw = unquantized_peer(w);  // outlives `peer`, which refers to it
  std::unique_ptr<RoutedInstance> peer;
  if (w.quantized()) {
    progress("[%s] unquantized peer: the same call with %s weights", name, vkgmm::dtype_name(w.dtype));
    std::vector<std::string> unused;
    const vkgmm::TilingChoice peer_tiling = choose_tiling(o, pw, cache, unused);
    try {
      peer = std::make_unique<RoutedInstance>(ctx, pw, peer_tiling, o.expert_shards);
      check_routed_or_refuse(
          timer, w, "unquantized peer, tiling " + peer->tiling_text(), [&] { peer->poison_outputs(); },
          [&](VkCommandBuffer cb) { peer->record(cb); },
          [&] { return peer->device_status(); }, [&] { return peer->download(); }, routed_reference(*peer, true));
      calls.push_back({[&, peer_tiling] { peer->plan(peer_tiling, true); }, [&](VkCommandBuffer cb) { peer->record(cb); }});
    } catch (const vkgmm::Error& e) {  // e.g. unquantized weights past a binding's limit: no ratio
      peer.reset();
      r.notes.push_back(std::string("unquantized peer not run: ") + e.what());
    }
  }
  inst.plan(tiling, true);
  const int reps = reps_for(o, timer.run_ms(record), clock);
  r.reps = reps;
  progress("[%s] matches the reference; timing %d reps after %d warmup, %zu kinds of call alternating", name, reps,
           o.warmup, calls.size());
  const std::vector<Samples> s = clock.alternate(reps, o.warmup, calls);
  r.time = summarize(s[0]);
  r.per_slot_ms = median(s[1].gpu_ms);
  if (chain) {
    r.chain_ms = median(s[2].gpu_ms);
    r.sorted_ms = median(s[3].gpu_ms);
  }
  r.copy_ms = median(s[copy_call].gpu_ms);
  if (peer) r.peer_ms = median(s.back().gpu_ms);
  set_rates(r, run);
  counted.into(r.timed_calls, r.evictions);
  progress("[%s] ids: gpu %.3f ms median (%.1f%% of copy), per slot %.3f ms, chain %s ms, sorted gmm %s ms", name,
           r.time.gpu_ms_median, 100 * r.copy_fraction, *r.per_slot_ms,
           r.chain_ms ? std::to_string(*r.chain_ms).c_str() : "-", r.sorted_ms ? std::to_string(*r.sorted_ms).c_str() : "-");
  return r;
}

// A routed backward (moe-grad-ids): GmmBackwardPlan on the routed forward, its gradients checked on a
// sample of tokens and experts against reference::gmm_routed_backward (routed_grad.hpp), the forward's
// output and the sorted path's backward on the same sample, then the three timed alternately, one call
// of each per round, each from evicted caches. The plans are built once, as measure_train's (no host share
// is timed).
Result measure_routed_grad(vkgmm::Context& ctx, CallTimer& clock, const Options& o, const Workload& w,
                           const RunInfo& run, const std::filesystem::path& cache) {
  const char* name = w.name.c_str();
  GpuTimer& timer = clock.timer();
  const Counted counted{clock};
  progress("[%s] backward of a gmm routed by ids: T=%lld k=%lld n=%lld E=%lld top_k=%lld %s (%lld experts "
           "selected): preparing inputs",
           name, (long long)w.m, (long long)w.k, (long long)w.n, (long long)w.groups, (long long)w.top_k,
           vkgmm::dtype_name(w.dtype), (long long)distinct_experts(w));
  Result r;
  r.work = w;
  r.metadata = "ids";
  r.expert_shards = 1;
  if (o.expert_shards > 1) r.notes.push_back("--expert-shards: the routed backward runs its experts in one window");
  const vkgmm::TilingChoice tiling = choose_tiling(o, w, cache, r.notes);
  RoutedGradInstance inst(ctx, w, tiling);
  r.tiling = inst.tiling_text();
  r.sorted_tiling = inst.sorted_tiling_text();
  const tool::Stopwatch watch;
  const GradReference want = grad_reference(inst);
  r.checked_tokens = int64_t(want.sample.tokens.size());
  r.checked_experts = int64_t(want.sample.experts.size());
  progress("[%s] CPU reference on %lld sampled tokens and %lld experts computed in %.1f s", name,
           (long long)r.checked_tokens, (long long)r.checked_experts, watch.seconds());
  const auto backward = [&](VkCommandBuffer cb) { inst.record(cb); };
  const auto forward = [&](VkCommandBuffer cb) { inst.forward.record(cb); };
  const auto sorted = [&](VkCommandBuffer cb) { inst.record_sorted(cb); };
  const auto sample = [&](std::vector<Output> full) { return on_sample(want.sample, w, std::move(full)); };
  // The forward first: the backward reads the pre-activation it saves.
  check_routed_or_refuse(
      timer, w, "routed forward, tiling " + inst.forward.tiling_text(), [&] { inst.forward.poison_outputs(); }, forward,
      [&] { return inst.forward.device_status(); }, [&] { return sample(inst.forward.download()); }, want.forward,
      vkgmm::DType::f32, "forward");
  check_routed_or_refuse(
      timer, w, "routed backward, tiling " + r.tiling, [&] { inst.poison_outputs(); }, backward,
      [&] { return inst.device_status(); },
      [&] { return sample(inst.download()); }, want.backward, w.dtype);
  check_routed_or_refuse(
      timer, w, "sorted backward, tiling " + r.sorted_tiling, [&] { inst.poison_outputs(); }, sorted, [] { return 0u; },
      [&] { return sample(inst.download_sorted()); }, want.sorted, w.dtype);
  r.reps = reps_for(o, timer.run_ms(backward), clock);
  progress("[%s] matches the reference; timing %d reps after %d warmup: backward, forward, sorted backward, "
           "alternating", name, r.reps, o.warmup);
  const std::vector<Samples> s = clock.alternate(r.reps, o.warmup, {{[] {}, backward}, {[] {}, forward}, {[] {}, sorted}});
  r.time = summarize(s[0]);
  r.forward_ms = median(s[1].gpu_ms);
  r.sorted_ms = median(s[2].gpu_ms);
  set_rates(r, run);
  counted.into(r.timed_calls, r.evictions);
  progress("[%s] gpu ms median: backward %.3f (%.2f GFLOP/s, %.2fx the forward's %.3f), sorted backward %.3f", name,
           r.time.gpu_ms_median, r.gflops, r.time.gpu_ms_median / *r.forward_ms, *r.forward_ms, *r.sorted_ms);
  return r;
}

// A model's MoE layer: each projection checked against the reference on its own (gate/up on the router's
// ids; down on the slots the device's gate/up wrote), then the whole layer once, then timed: both calls in
// one command buffer, as an engine runs them.
Result measure_layer(vkgmm::Context& ctx, CallTimer& clock, const Options& o, const ModelLayer& l, const RunInfo& run,
                     const std::filesystem::path& cache) {
  GpuTimer& timer = clock.timer();
  const Counted counted{clock};
  const std::string label = l.name();
  const char* name = label.c_str();
  const Workload& up = l.up;
  progress("[%s] %s layer, --scale %lld: T=%lld hidden=%lld expert=%lld E=%lld top_k=%lld, %s activations, %s "
           "weights (%lld experts selected): preparing inputs",
           name, l.model->title, (long long)l.scale, (long long)l.tokens, (long long)up.k, (long long)up.n_out(),
           (long long)up.groups, (long long)up.top_k, vkgmm::dtype_name(up.dtype), vkgmm::dtype_name(up.rhs_type()),
           (long long)distinct_experts(up));
  Result r;
  r.work = up;
  r.work.name = label;
  r.layer = l;
  r.metadata = "ids";
  const vkgmm::TilingChoice tiling = choose_tiling(o, up, cache, r.notes);
  LayerInstance inst(ctx, l, tiling, o.expert_shards);
  r.tiling = inst.tiling_text();
  r.expert_shards = std::max(inst.up.shards(), inst.down.shards());
  if (r.expert_shards > 1)
    r.notes.push_back("experts in windows (gate/up " + std::to_string(inst.up.shards()) + ", down " +
                      std::to_string(inst.down.shards()) + "): one call each, accumulating through existing_out");
  if (*l.model->note) r.notes.push_back(l.model->note);
  const tool::Stopwatch watch;
  const auto status = [&] { return inst.up.device_status() | inst.down.device_status(); };
  const std::vector<Output> want_up = routed_reference(inst.up, false);
  check_routed_or_refuse(
      timer, r.work, "gate/up, tiling " + inst.up.tiling_text(), [&] { inst.up.poison_outputs(); },
      [&](VkCommandBuffer cb) { inst.up.record(cb); },
      status, [&] { return inst.up.download(); }, want_up, up.slots_type);
  inst.down.a = inst.up.download().front().values;  // what down reads, as the device wrote it
  const std::vector<Output> want = routed_reference(inst.down, true);
  progress("[%s] CPU references (gate/up, down) computed in %.1f s", name, watch.seconds());
  check_routed_or_refuse(
      timer, r.work, "down, tiling " + inst.down.tiling_text(), [&] { inst.down.poison_outputs(); },
      [&](VkCommandBuffer cb) { inst.down.record(cb); },
      status, [&] { return inst.down.download(); }, want);
  const auto record = [&](VkCommandBuffer cb) { inst.record(cb); };
  // The parts' own checks left their answers in both outputs: the layer's call must write them again.
  const auto poison_both = [&] {
    inst.up.poison_outputs();
    inst.down.poison_outputs();
  };
  check_routed_or_refuse(timer, r.work, "the layer, gate/up then down", poison_both, record, status,
                         [&] { return inst.down.download(); }, want);
  const int reps = reps_for(o, timer.run_ms(record), clock);
  r.reps = reps;
  progress("[%s] matches the reference; timing %d reps after %d warmup", name, reps, o.warmup);
  r.time = summarize(clock.time(reps, o.warmup, [&] { inst.plan(tiling); }, record));
  set_rates(r, run);
  counted.into(r.timed_calls, r.evictions);
  progress("[%s] gpu %.3f ms median per layer, %.0f tokens/s, %.2f GFLOP/s", name, r.time.gpu_ms_median,
           double(l.tokens) / (r.time.gpu_ms_median * 1e-3), r.gflops);
  return r;
}

// A model layer's training step (--train) through MoeLayerPlan, checked first (train_check.cpp), then
// timed alternately, one call of each kind per round: the forward alone, the backward alone (reading
// the words the forward before it saved in the plan's workspace) and both in one command buffer. Every
// call starts from evicted caches, as each layer's backward finds its weights after the other layers'.
// The plan is built once (its workspace is what the backward reads). Shapes the library refuses: a
// skipped row with its message.
TrainResult measure_train(vkgmm::Context& ctx, CallTimer& clock, const Options& o, const ModelLayer& l) {
  GpuTimer& timer = clock.timer();
  const Counted counted{clock};
  const std::string label = l.name() + " train";
  const char* name = label.c_str();
  TrainResult r;
  std::unique_ptr<TrainInstance> inst;
  try {
    inst = std::make_unique<TrainInstance>(ctx, l);
  } catch (const vkgmm::Error& e) {
    if (e.status() != vkgmm::Status::unsupported && e.status() != vkgmm::Status::out_of_memory) throw;
    r.skipped = e.what();
    progress("[%s] skipped, the library refuses the layer: %s", name, e.what());
    return r;
  }
  const auto forward = [&](VkCommandBuffer cb) { inst->record_forward(cb); };
  const auto backward = [&](VkCommandBuffer cb) { inst->record_backward(cb); };
  const auto step = [&](VkCommandBuffer cb) {
    forward(cb);
    backward(cb);
  };
  const std::string refused = "model layer '" + l.name() + "' (--train): ";
  inst->poison_outputs();
  timer.run_ms(step);
  if (const uint32_t word = inst->device_status())
    throw Refused(refused + "device status word " + std::to_string(word) + " for the top-k's ids; refusing to time it");
  const tool::Stopwatch watch;
  if (auto diff = check_train(*inst, inst->download(), r.checked_tokens))
    throw Refused(refused + "differs from the CPU reference: " + *diff + "; refusing to time it");
  progress("[%s] y and d_x of %lld sampled tokens match the CPU reference (%.1f s), every gradient finite", name,
           (long long)r.checked_tokens, watch.seconds());
  r.reps = reps_for(o, timer.run_ms(step), clock);
  progress("[%s] timing %d reps after %d warmup: forward, backward, both, alternating", name, r.reps, o.warmup);
  const std::vector<Samples> s =
      clock.alternate(r.reps, o.warmup, {{[] {}, forward}, {[] {}, backward}, {[] {}, step}});
  r.forward_ms = median(s[0].gpu_ms);
  r.backward_ms = median(s[1].gpu_ms);
  r.forward_backward_ms = median(s[2].gpu_ms);
  counted.into(r.timed_calls, r.evictions);
  progress("[%s] gpu ms median: forward %.3f, backward %.3f (%.2fx the forward), both %.3f", name, r.forward_ms,
           r.backward_ms, r.backward_ms / r.forward_ms, r.forward_backward_ms);
  return r;
}

SweepResult sweep(vkgmm::Context& ctx, CallTimer& clock, const Options& o, const Workload& w,
                  const std::filesystem::path& cache) {
  const char* name = w.name.c_str();
  GpuTimer& timer = clock.timer();
  const Counted counted{clock};
  announce(w, "sweeping tilings");
  SweepResult res;
  res.work = w;
  res.cache_file = cache.string();
  Instance inst(ctx, w, vkgmm::TilingChoice::automatic());
  const std::vector<Output> want = reference_for(inst);

  // The library's own choice first, then every candidate that plans (fits the device) and resolves to a
  // tiling not tried yet; each is checked against the reference. Each is the table's host-path call
  // with that tiling (host_call): the default one is the very call the table times.
  struct Candidate {
    std::optional<vkgmm::Tiling> choice;  // nullopt: the library's automatic choice
    std::string resolved;
    Call call;
  };
  auto tiling_choice = [](const std::optional<vkgmm::Tiling>& c) {
    return c ? vkgmm::TilingChoice::of(*c) : vkgmm::TilingChoice::automatic();
  };
  std::vector<std::optional<vkgmm::Tiling>> choices = {std::nullopt};
  for (const vkgmm::Tiling& t : sweep_candidates()) choices.push_back(t);
  std::set<std::string> seen;
  std::vector<Candidate> cands;
  for (const auto& choice : choices) {
    Call call;
    try {
      call = host_call(inst, o, tiling_choice(choice));
    } catch (const vkgmm::Error& e) {
      progress("[%s] tiling %s does not fit this device: %s", name, tiling_text(*choice).c_str(), e.what());
      continue;
    }
    const std::string resolved = inst.tiling_text();
    if (!seen.insert(resolved).second) continue;
    if (!choice) {
      res.default_tiling = resolved;
      res.default_plan = inst.describe();
    }
    check_or_refuse(timer, inst, want, "tiling " + resolved);
    cands.push_back({choice, resolved, std::move(call)});
  }
  // Timed as the table times its calls: the table's count of reps for the default call's time, the same
  // warmup, each call from evicted caches, one call of each candidate per round (a disturbance of the
  // shared machine then hits every candidate alike; plans are rebuilt per call, their pipelines cached).
  cands.front().call.prepare();
  res.reps = reps_for(o, timer.run_ms(cands.front().call.record), clock);
  progress("[%s] timing %zu tilings, %d reps after %d warmup, alternating", name, cands.size(), res.reps, o.warmup);
  std::vector<Call> calls;
  for (const Candidate& c : cands) calls.push_back(c.call);
  const std::vector<Samples> s = clock.alternate(res.reps, o.warmup, calls);
  std::optional<vkgmm::Tiling> best_resolved;
  for (size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    res.tried.push_back({c.resolved, median(s[i].gpu_ms)});
    progress("[%s] tiling %-14s %10.3f ms", name, c.resolved.c_str(), res.tried.back().gpu_ms_median);
    if (res.tried.back().gpu_ms_median < res.tried[res.best].gpu_ms_median || res.tried.size() == 1) {
      res.best = res.tried.size() - 1;
      // Cache the tiling the winner's plans ran (passed back explicitly, it resolves to itself). A
      // backward whose two plans resolved differently keeps the tiling that was asked for.
      const bool one = c.resolved.find('/') == std::string::npos;
      best_resolved = one || !c.choice ? parse_tiling(c.resolved.substr(0, c.resolved.find('/'))) : c.choice;
    }
  }
  if (res.tried.empty()) throw std::runtime_error("workload '" + w.name + "': no tiling fits this device");
  counted.into(res.timed_calls, res.evictions);
  // The cache is read by every later run with --tiling auto, whatever its grid: a tiling timed on a grid
  // other than the one a plain run takes was measured under other conditions.
  if (run_grid(o) != vkgmm::Grid::automatic) {
    res.not_cached = std::string("timed on the ") + workgroup_grid_name(o.workgroups) +
                     " grid (--grid), not the one a run with --tiling auto takes: not cached";
  } else {
    store_tiling(cache, w, *best_resolved);
  }
  return res;
}

}  // namespace
}  // namespace bench

int bench_main(int argc, char** argv) {
  using namespace bench;
  Options o;
  std::string error;
  if (const int status = parse_args(argc, argv, o, error); status != 0)
    return status == 1 ? 0 : tool::fail(2, error, kProgram);
  try {
    // The grid the device path takes: forced by --device-grid (both: the indirect grid, and the upper-bound
    // one through a workspace that is no indirect buffer); auto leaves the library's ($VKGMM_DEVICE_GRID).
    vkgmm::ContextOptions copts;
    if (o.grid == GridRun::indirect || o.grid == GridRun::both) copts.device_grid = vkgmm::DeviceGrid::indirect;
    if (o.grid == GridRun::bound) copts.device_grid = vkgmm::DeviceGrid::upper_bound;
    vkgmm::Context ctx(copts);
    RunInfo run;
    run.device = ctx.info().name;
    run.driver = ctx.info().driver;
    run.cpu_device = ctx.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    run.openblas = openblas_description();
    progress("measuring the device's FMA ceiling, read and copy bandwidth on %s", run.device.c_str());
    // Test-only: $VKGMM_BENCH_ROOF_SCALE scales the measured roofs (the FMA ceiling and the streaming read),
    // so that a test can see a call beat them (tests/bench/check_bench.py roofs). Read before probing.
    const double roof_scale = roof_scale_from_environment();
    run.ceilings = vkgmm::measure_ceilings(ctx);
    run.ceilings.fma_gflops *= roof_scale;
    run.ceilings.read_gbps *= roof_scale;
    progress("%.1f GFLOP/s, read %.1f GB/s (%s), copy %.1f GB/s; last-level cache %llu MiB (%s)",
             run.ceilings.fma_gflops, run.ceilings.read_gbps, run.ceilings.read_path.c_str(), run.ceilings.copy_gbps,
             (unsigned long long)(run.ceilings.cache.bytes >> 20), run.ceilings.cache.source.c_str());
    const CacheEviction evict(ctx, run.ceilings.cache);
    run.eviction_kind = evict.kind();
    run.eviction_bytes = evict.bytes();
    GpuTimer timer(ctx);
    CallTimer clock(timer, evict);
    const std::filesystem::path cache = cache_path(run.device);

    if (o.sweep) {
      std::vector<SweepResult> results;
      for (const Workload& w : o.workloads) results.push_back(sweep(ctx, clock, o, w, cache));
      (o.json ? print_sweep_json : print_sweep_table)(stdout, run, results);
      return 0;
    }
    std::vector<Result> results;
    for (const Workload& w : o.workloads)
      results.push_back(!w.routed()             ? measure(ctx, clock, o, w, run, cache)
                        : w.op == Op::backward ? measure_routed_grad(ctx, clock, o, w, run, cache)
                                               : measure_routed(ctx, clock, o, w, run, cache));
    for (const ModelLayer& l : o.layers) {
      results.push_back(measure_layer(ctx, clock, o, l, run, cache));
      if (o.train) results.back().train = measure_train(ctx, clock, o, l);
    }
    (o.json ? print_json : print_table)(stdout, run, results);
    return 0;
  } catch (const Refused& e) {
    return tool::fail(1, e.what(), kProgram);
  } catch (const vkgmm::Error& e) {
    // A workload the device refuses (too large, unsupported type) is the user's choice of arguments.
    return tool::fail(e.status() == vkgmm::Status::invalid_argument ? 2 : 1, e.what(), kProgram);
  } catch (const std::exception& e) {
    return tool::fail(1, e.what(), kProgram);
  }
}
