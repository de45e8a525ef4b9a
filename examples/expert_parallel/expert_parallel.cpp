// Expert parallelism over MPI with vkgmm: N ranks, each with its own vkgmm Context (its own device; on
// one machine they share it), E experts split E / N per rank, T tokens split T / N per rank (data
// parallel). One step, forward and backward, of an expert projection y[t] = sum_k weight * (x[t] @ W[e]):
//   router -> top-k -> counts all-to-all -> rows all-to-all to the experts' ranks -> gmm routed by the
//   rows' expert ids over the local experts (group_offset = the rank's first expert), the rows in the
//   order they arrived -> all-to-all back -> combine with the routing weights;
//   d_y * weight -> all-to-all -> d_x rows and d_W by the routed gmm's backward plan -> d_x rows
//   all-to-all back -> sum per token.
// Every rank checks its tokens' y and d_x and its experts' d_W against the single-process answer computed
// token by token (model.cpp); the run exits non-zero on any mismatch. Rank 0 prints the per-rank table.
//
//   mpirun -n 4 build/examples/expert_parallel/vkgmm_example_expert_parallel [--tokens 128] [--experts 8]
//       [--top-k 2] [--d-model 128] [--d-out 96] [--steps 5] [--seed 7] [--corrupt-rank R] [--stale-rank R]
//       [--help]
// Sizes are refused at parse time (exit 2, naming the flag) where they would overflow the int32 routing
// counts or MPI's int counts, and so are arguments that differ between ranks; a mismatch exits 1; an
// exception on any rank aborts the job with code 3.
//
// Test-only: VKGMM_EXAMPLE_PLANT_LEAK=1 (read once, at the start of main) leaks 16 bytes from this file's
// plant_leak_for_the_sanitizer_test(), so that the sanitizer run shows LeakSanitizer still reports a leak
// of the example's own past the MPI runtime's suppressions (scripts/lsan.supp).
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <vkgmm/vkgmm.hpp>

#include "check.hpp"
#include "layer_step.hpp"
#include "report.hpp"

namespace {

struct Options {
  ep::Shape shape;
  int steps = 5;
  uint32_t seed = 7;
  int corrupt_rank = -1;  // the check's own tests: that rank returns one wrong value,
  int stale_rank = -1;    // or keeps its first step's rows and ids on the device
  bool help = false;
};

const char* const kUsage =
    "usage: mpirun -n N vkgmm_example_expert_parallel [--tokens 128] [--experts 8] [--top-k 2] [--d-model 128]\n"
    "           [--d-out 96] [--steps 5] [--seed 7] [--corrupt-rank R] [--stale-rank R]\n"
    "One expert projection, forward and backward, with the experts split over the N ranks (--experts a\n"
    "multiple of N) and the tokens sent to them and back over MPI, each step on new tokens; every rank\n"
    "checks each step's results against the single-process answer in double. Exits 1 on a mismatch, 2 on\n"
    "bad arguments (every rank must be given the same); an error on one rank aborts the job (MPI_Abort,\n"
    "code 3). The check's own tests, which must fail: --corrupt-rank R, rank R returns a wrong value;\n"
    "--stale-rank R, rank R's experts compute on their first step's rows again in later steps.\n";

// A rank may receive every slot of every token (tokens * top_k rows: int32 ids and counts), and one
// exchange moves at most INT_MAX floats (MPI-3's int counts and displacements). Sizes are bounded so that
// both hold whatever the routing, and so that no product the example computes overflows.
constexpr int64_t kInt32Max = INT32_MAX;

// a * b <= limit, for a, b >= 1, without computing a product that could overflow.
bool product_within(int64_t a, int64_t b, int64_t limit) { return a <= limit / b; }

// `text` as an integer in [lo, hi], or an error naming `flag`.
bool parse_integer(const std::string& flag, const char* text, int64_t lo, int64_t hi, int64_t& value,
                   std::string& error) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end) {
    error = flag + ": '" + text + "' is not an integer";
    return false;
  }
  if (errno == ERANGE || v < lo || v > hi) {
    error = flag + ": " + text + " is out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")";
    return false;
  }
  value = v;
  return true;
}

// One rank's arguments; agree_on_arguments makes the verdict the job's.
bool parse(int argc, char** argv, int ranks, Options& o, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    int64_t* field = flag == "--tokens"    ? &o.shape.tokens
                     : flag == "--experts" ? &o.shape.experts
                     : flag == "--top-k"   ? &o.shape.top_k
                     : flag == "--d-model" ? &o.shape.d_model
                     : flag == "--d-out"   ? &o.shape.d_out
                                           : nullptr;
    int64_t lo = 1, hi = kInt32Max;
    if (flag == "--steps") {
      hi = 1000;
    } else if (flag == "--seed") {
      lo = 0, hi = UINT32_MAX;  // std::mt19937's seed is 32 bits: a larger one would wrap to another seed
    } else if (flag == "--corrupt-rank" || flag == "--stale-rank") {
      lo = 0, hi = ranks - 1;
    } else if (!field) {
      error = flag + ": unknown argument (see --help)";
      return false;
    }
    if (i + 1 >= argc) {
      error = flag + ": needs a value";
      return false;
    }
    int64_t v = 0;
    if (!parse_integer(flag, argv[++i], lo, hi, v, error)) return false;
    if (field)
      *field = v;
    else if (flag == "--steps")
      o.steps = int(v);
    else if (flag == "--seed")
      o.seed = uint32_t(v);
    else if (flag == "--corrupt-rank")
      o.corrupt_rank = int(v);
    else
      o.stale_rank = int(v);
  }
  const ep::Shape& sh = o.shape;
  if (sh.experts % ranks) {
    error = "--experts: " + std::to_string(sh.experts) + " experts do not split evenly over " +
            std::to_string(ranks) + " ranks";
    return false;
  }
  if (o.stale_rank >= 0 && o.steps < 2) {
    error = "--stale-rank: needs --steps 2 or more (a rank's rows go stale from its second step)";
    return false;
  }
  if (sh.top_k > sh.experts) {
    error = "--top-k: larger than --experts";
    return false;
  }
  if (!product_within(sh.tokens, sh.top_k, kInt32Max)) {
    error = "--tokens, --top-k: " + std::to_string(sh.tokens) + " tokens * top-" + std::to_string(sh.top_k) +
            " is more slots than int32 ids and counts hold (" + std::to_string(kInt32Max) + ")";
    return false;
  }
  if (!product_within(sh.tokens * sh.top_k, std::max(sh.d_model, sh.d_out), INT_MAX)) {
    error = "--tokens, --top-k, --d-model, --d-out: a rank may receive all " + std::to_string(sh.tokens * sh.top_k) +
            " slots, and rows of " + std::to_string(std::max(sh.d_model, sh.d_out)) +
            " floats would pass the INT_MAX floats one MPI exchange can move";
    return false;
  }
  if (!product_within(sh.experts, sh.d_model, kInt32Max) ||
      !product_within(sh.experts * sh.d_model, sh.d_out, kInt32Max)) {
    error = "--experts, --d-model, --d-out: the experts' weights, " + std::to_string(sh.experts) + " x " +
            std::to_string(sh.d_model) + " x " + std::to_string(sh.d_out) + ", are more than " +
            std::to_string(kInt32Max) + " floats";
    return false;
  }
  return true;
}

// The job's verdict on its arguments: every rank's parse, then every rank's options against rank 0's (an
// MPMD launch may give ranks different ones, and a rank that went on alone would wait forever in a
// collective). The first rank refused says why; every rank returns the same.
bool agree_on_arguments(MPI_Comm comm, bool parsed, std::string error, const Options& o) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  auto first_refused = [&](bool ok) {
    int mine = ok ? ranks : rank, first = ranks;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == rank) {
      const std::string who = ranks > 1 ? "rank " + std::to_string(rank) + ": " : "";
      std::fprintf(stderr, "vkgmm_example_expert_parallel: %s%s\n", who.c_str(), error.c_str());
    }
    return first == ranks;
  };
  if (!first_refused(parsed)) return false;
  const std::pair<const char*, int64_t> mine[] = {
      {"--tokens", o.shape.tokens}, {"--experts", o.shape.experts}, {"--top-k", o.shape.top_k},
      {"--d-model", o.shape.d_model}, {"--d-out", o.shape.d_out}, {"--steps", o.steps}, {"--seed", o.seed},
      {"--corrupt-rank", o.corrupt_rank}, {"--stale-rank", o.stale_rank}, {"--help", o.help}};
  constexpr int kCount = int(sizeof mine / sizeof mine[0]);
  int64_t values[kCount], first[kCount];
  for (int i = 0; i < kCount; ++i) values[i] = first[i] = mine[i].second;
  MPI_Bcast(first, kCount, MPI_INT64_T, 0, comm);
  bool same = true;
  for (int i = 0; i < kCount && same; ++i)
    if (values[i] != first[i]) {
      error = std::string(mine[i].first) + ": " + std::to_string(values[i]) + " here, " + std::to_string(first[i]) +
              " on rank 0: every rank must be given the same arguments";
      same = false;
    }
  return first_refused(same);
}

// Each step's agreement with its own reference, and the worst step's, per quantity.
struct Worst {
  ep::Agreement a;
  void take(const ep::Agreement& s) {
    if (s.bad > a.bad || (s.bad == a.bad && !(s.max_error < a.max_error))) a = s;
  }
  bool report(int rank, const char* what, int steps) const {
    std::printf("rank %d: %-4s %7zu values, max error %.2e, worst of %d steps%s\n", rank, what, a.values, a.max_error,
                steps, a.ok() ? "" : "  FAIL: differs from the single-process result");
    return a.ok();
  }
};

int run(MPI_Comm comm, const Options& o) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const ep::Shape& sh = o.shape;
  const int64_t per_rank = sh.experts / ranks, first = rank * per_rank;
  ep::Model model = ep::make_model(sh, o.seed);
  const ep::Slice slice = ep::token_slice(sh.tokens, rank, ranks);

  vkgmm::Context ctx;
  if (rank == 0)
    std::printf("%d ranks on %s: %lld tokens, %lld experts (%lld per rank), top-%lld, d_model %lld, d_out %lld\n",
                ranks, ctx.info().name.c_str(), (long long)sh.tokens, (long long)sh.experts, (long long)per_rank,
                (long long)sh.top_k, (long long)sh.d_model, (long long)sh.d_out);
  const size_t shard_floats = per_rank * sh.d_model * sh.d_out;
  const std::vector<float> weights(model.w.begin() + first * sh.d_model * sh.d_out,
                                   model.w.begin() + first * sh.d_model * sh.d_out + shard_floats);
  ep::ExpertShard shard(ctx, {sh.tokens * sh.top_k, sh.d_model, sh.d_out, sh.experts, first, per_rank}, weights);

  // Each step on inputs of its own, checked against its own reference; only its figures are kept.
  std::vector<ep::StepOutput> steps;
  Worst y, d_x, d_w;
  for (int i = 0; i < o.steps; ++i) {
    ep::draw_step(model, o.seed, i);
    ep::Fault fault;
    fault.wrong_value = rank == o.corrupt_rank;
    fault.stale_rows = rank == o.stale_rank && i > 0;
    ep::StepOutput s = ep::expert_parallel_step(comm, model, slice, shard, fault);
    const ep::Reference ref = ep::reference(model, slice, first, per_rank);
    y.take(ep::agree(s.y, ref.y, sh.top_k * sh.d_model));
    d_x.take(ep::agree(s.d_x, ref.d_x, sh.top_k * sh.d_out));
    d_w.take(ep::agree(s.d_w, ref.d_w, sh.tokens * sh.top_k));
    s.y = s.d_x = s.d_w = {};
    steps.push_back(std::move(s));
  }
  bool ok = y.report(rank, "y", o.steps);
  ok = d_x.report(rank, "d_x", o.steps) && ok;
  ok = d_w.report(rank, "d_W", o.steps) && ok;
  for (const std::string& m : ctx.take_validation_messages()) {
    std::printf("rank %d: validation: %s\n", rank, m.c_str());
    ok = false;
  }
  std::fflush(stdout);

  ep::RankFigures f;
  f.tokens = slice.size();
  f.expert_rows = steps.back().expert_rows;
  f.bytes_sent = steps.back().traffic.bytes_sent;
  f.bytes_received = steps.back().traffic.bytes_received;
  std::vector<double> wait, a2a, vk, staging, host, total;
  for (const ep::StepOutput& s : steps) {
    wait.push_back(1e3 * s.traffic.wait_seconds);
    a2a.push_back(1e3 * s.traffic.seconds);
    vk.push_back(1e3 * s.shard.vkgmm);
    staging.push_back(1e3 * s.shard.staging);
    host.push_back(1e3 * (s.seconds - s.traffic.wait_seconds - s.traffic.seconds - s.shard.vkgmm - s.shard.staging));
    total.push_back(1e3 * s.seconds);
  }
  f.wait_ms = ep::median(wait);
  f.all_to_all_ms = ep::median(a2a);
  f.vkgmm_ms = ep::median(vk);
  f.staging_ms = ep::median(staging);
  f.host_ms = ep::median(host);
  f.step_ms = ep::median(total);
  ep::print_report(comm, f);

  int failed = ok ? 0 : 1, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
  if (rank == 0)
    std::printf(any_failed ? "FAIL: some rank differs from the single-process result\n"
                           : "every rank matches the single-process result (y, d_x, d_W; %d steps)\n",
                o.steps);
  return any_failed ? 1 : 0;
}

// The allocation's only pointer goes through a volatile (so the compiler must make the allocation) and is
// then overwritten: nothing reaches it at exit. Not inlined, so that the report names this function.
int* volatile planted_leak = nullptr;
[[gnu::noinline]] void plant_leak_for_the_sanitizer_test() {
  planted_leak = new int[4]{1, 2, 3, 4};
  planted_leak = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const char* plant = std::getenv("VKGMM_EXAMPLE_PLANT_LEAK");
  if (plant && std::string(plant) == "1") plant_leak_for_the_sanitizer_test();
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Options o;
  std::string error;
  int status = 2;
  const bool parsed = parse(argc, argv, ranks, o, error);
  if (!agree_on_arguments(MPI_COMM_WORLD, parsed, error, o)) {
    // refused on every rank, and said by the first refused
  } else if (o.help) {
    if (rank == 0) std::printf("%s", kUsage);
    status = 0;
  } else {
    // A rank that fails alone would leave the others waiting in a collective: abort the job instead.
    try {
      status = run(MPI_COMM_WORLD, o);
    } catch (const vkgmm::Error& e) {
      std::fprintf(stderr, "rank %d: FAIL: vkgmm: %s (%s)\n", rank, e.what(), vkgmm::status_name(e.status()));
      MPI_Abort(MPI_COMM_WORLD, 3);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: FAIL: %s\n", rank, e.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  MPI_Finalize();
  return status;
}
