/* The C API from C11: a gmm, tgmm and backward against plain loops, the record path through a
 * submit callback, and the error paths (status, message, nothing created). Validation is on: any
 * validation message turns a run into VKGMM_VALIDATION and fails the test. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <vkgmm/vkgmm.h>

static int failures = 0;

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last message: %s\n", __FILE__, \
              __LINE__, #cond, vkgmm_last_error_message());                     \
      ++failures;                                                               \
    }                                                                           \
  } while (0)

/* The last message, which names the C API's fields and calls, never the C++ API's. */
static const char* message(void) {
  static const char* const cpp[] = {"::", "ContextOptions", "BorrowedDevice", "DeviceInfo", "Python", ".shape",
                                    "routing.", "epilogue.", "workspace_bytes", "device_group_sizes",
                                    "create_buffer", "borrow_buffer", "device_requirements("};
  const char* m = vkgmm_last_error_message();
  for (size_t i = 0; i < sizeof cpp / sizeof cpp[0]; ++i)
    if (strstr(m, cpp[i])) {
      fprintf(stderr, "  a C message names the C++ API (%s): %s\n", cpp[i], m);
      ++failures;
    }
  return m;
}

#define M 10
#define K 8
#define N 6
#define G 3

static const int32_t sizes[G] = {3, 0, 5}; /* an empty group; rows 8 and 9 belong to none */

static float lhs[M * K], rhs[G * K * N], out[M * N];

static int near(float got, double want) { return fabs(got - want) <= 1e-4 * (1 + fabs(want)); }

static void fill(float* v, int count, int seed) {
  for (int i = 0; i < count; ++i) v[i] = (float)((i * 37 + seed * 11) % 17 - 8) / 8.0f;
}

static vkgmm_buffer* make_buffer(vkgmm_context* ctx, const float* data, size_t count) {
  vkgmm_buffer* b = NULL;
  CHECK(vkgmm_buffer_create(ctx, count * sizeof(float), &b) == VKGMM_OK);
  if (b && data) CHECK(vkgmm_buffer_upload(b, data, count * sizeof(float), 0) == VKGMM_OK);
  return b;
}

/* gmm's expected value at (r, j) for G groups of sizes gs: group g's rows times rhs[g], zero outside. */
static double gmm_want_for(const int32_t* gs, int r, int j) {
  int start = 0;
  for (int g = 0; g < G; ++g) {
    if (r >= start && r < start + gs[g]) {
      double s = 0;
      for (int i = 0; i < K; ++i) s += (double)lhs[r * K + i] * rhs[(g * K + i) * N + j];
      return s;
    }
    start += gs[g];
  }
  return 0;
}
static double gmm_want(int r, int j) { return gmm_want_for(sizes, r, j); }

/* Elements of a tgmm output got[G, K, N] (lhs read as [M, K], rhs d [M, N]) that differ from
 * lhs[rows(g)]^T @ d[rows(g)] for G groups of sizes gs. */
static int tgmm_mismatches(const int32_t* gs, const float* d, const float* got) {
  int bad = 0, start = 0;
  for (int g = 0; g < G; ++g) {
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int r = start; r < start + gs[g]; ++r) s += (double)lhs[r * K + i] * d[r * N + j];
        bad += !near(got[(g * K + i) * N + j], s);
      }
    start += gs[g];
  }
  return bad;
}

static vkgmm_gmm_problem gmm_problem(void) {
  vkgmm_gmm_problem p;
  memset(&p, 0, sizeof p); /* zero = every default: f32, no offset, automatic tiling */
  p.struct_size = sizeof p;
  p.m = M;
  p.k = K;
  p.n = N;
  p.group_sizes = sizes;
  p.num_groups = G;
  return p;
}

struct record_args {
  const vkgmm_gmm_plan* plan;
  vkgmm_gmm_operands ops;
  vkgmm_status force; /* returned instead of recording, when not VKGMM_OK */
};

static vkgmm_status record_gmm(VkCommandBuffer cmd, void* user) {
  struct record_args* a = (struct record_args*)user;
  if (a->force != VKGMM_OK) return a->force;
  return vkgmm_gmm_plan_record(a->plan, cmd, &a->ops);
}

static void test_gmm(vkgmm_context* ctx) {
  vkgmm_gmm_problem p = gmm_problem();
  vkgmm_gmm_plan* plan = NULL;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_OK);
  if (!plan) return;
  vkgmm_operand_sizes s = {sizeof s};
  CHECK(vkgmm_gmm_plan_sizes(plan, &s) == VKGMM_OK);
  CHECK(s.lhs == M * K * 4 && s.rhs == G * K * N * 4 && s.out == M * N * 4 && s.metadata > 0);
  vkgmm_tiling t;
  CHECK(vkgmm_gmm_plan_tiling(plan, &t) == VKGMM_OK && t.tm > 0 && t.tk > 0 && t.tn > 0);
  vkgmm_schedule sched = VKGMM_SCHEDULE_AUTO;
  CHECK(vkgmm_gmm_plan_schedule(plan, &sched) == VKGMM_OK &&
        (sched == VKGMM_SCHEDULE_DIRECT || sched == VKGMM_SCHEDULE_SHARED || sched == VKGMM_SCHEDULE_MATRIX));
  CHECK(vkgmm_gmm_plan_schedule(plan, NULL) == VKGMM_INVALID_ARGUMENT);

  vkgmm_buffer *bl = make_buffer(ctx, lhs, M * K), *br = make_buffer(ctx, rhs, G * K * N),
               *bo = make_buffer(ctx, NULL, M * N);
  vkgmm_gmm_operands ops = {sizeof ops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(br), vkgmm_buffer_whole(bo), {0}};

  /* The convenience path, then the record path through a callback: both must give the reference. */
  for (int path = 0; path < 2; ++path) {
    memset(out, 0xff, sizeof out);
    CHECK(vkgmm_buffer_upload(bo, out, sizeof out, 0) == VKGMM_OK);
    if (path == 0) {
      CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_OK);
    } else {
      struct record_args a = {plan, ops, VKGMM_OK};
      CHECK(vkgmm_submit_and_wait(ctx, record_gmm, &a) == VKGMM_OK);
    }
    CHECK(vkgmm_buffer_download(bo, out, sizeof out, 0) == VKGMM_OK);
    int bad = 0;
    for (int r = 0; r < M; ++r)
      for (int j = 0; j < N; ++j) bad += !near(out[r * N + j], gmm_want(r, j));
    CHECK(bad == 0);
    CHECK(strcmp(vkgmm_last_error_message(), "") == 0);
  }

  /* A callback that fails: its status comes back, nothing was submitted. */
  struct record_args failing = {plan, ops, VKGMM_UNSUPPORTED};
  CHECK(vkgmm_submit_and_wait(ctx, record_gmm, &failing) == VKGMM_UNSUPPORTED);
  /* A view too small for out: refused, naming the operand. */
  vkgmm_gmm_operands small = ops;
  small.out.size = 8;
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &small) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "out") != NULL);
  /* The context stays usable. */
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_OK);

  vkgmm_gmm_plan_destroy(plan);
  vkgmm_buffer_destroy(bl);
  vkgmm_buffer_destroy(br);
  vkgmm_buffer_destroy(bo);
}

static void test_tgmm_and_backward(vkgmm_context* ctx) {
  /* tgmm: out[g] = lhs[:, rows(g)] @ d[rows(g), :] with lhs [K, M]; here lhs^T is read from [M, K]. */
  vkgmm_tgmm_problem p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.m = M;
  p.k = K;
  p.n = N;
  p.group_sizes = sizes;
  p.num_groups = G;
  p.lhs_mk = 1;
  vkgmm_tgmm_plan* plan = NULL;
  CHECK(vkgmm_tgmm_plan_create(ctx, &p, &plan) == VKGMM_OK);
  float d[M * N], tout[G * K * N];
  fill(d, M * N, 3);
  vkgmm_buffer *bl = make_buffer(ctx, lhs, M * K), *bd = make_buffer(ctx, d, M * N), *bo = make_buffer(ctx, NULL, G * K * N);
  vkgmm_tgmm_operands ops = {sizeof ops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(bd), vkgmm_buffer_whole(bo), {0}};
  memset(tout, 0xff, sizeof tout); /* NaN: an empty group's zeros must be written */
  CHECK(vkgmm_buffer_upload(bo, tout, sizeof tout, 0) == VKGMM_OK);
  CHECK(vkgmm_tgmm_plan_run(ctx, plan, &ops) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bo, tout, sizeof tout, 0) == VKGMM_OK);
  int bad = tgmm_mismatches(sizes, d, tout);
  CHECK(bad == 0);

  /* The backward of gmm with cotangent d: d_lhs = d @ rhs[g]^T on the groups' rows; d_rhs = the tgmm above. */
  vkgmm_gmm_problem f = gmm_problem();
  vkgmm_gmm_backward_plan* bw = NULL;
  CHECK(vkgmm_gmm_backward_plan_create(ctx, &f, &bw) == VKGMM_OK);
  vkgmm_gmm_backward_sizes bs = {sizeof bs};
  CHECK(vkgmm_gmm_backward_plan_sizes(bw, &bs) == VKGMM_OK);
  CHECK(bs.lhs == M * K * 4 && bs.rhs == G * K * N * 4 && bs.d_out == M * N * 4 && bs.d_lhs == M * K * 4 &&
        bs.d_rhs == G * K * N * 4 && bs.metadata > 0);
  float dl[M * K], dr[G * K * N];
  vkgmm_buffer *br = make_buffer(ctx, rhs, G * K * N), *bdl = make_buffer(ctx, NULL, M * K),
               *bdr = make_buffer(ctx, NULL, G * K * N);
  vkgmm_gmm_backward_operands bops = {sizeof bops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(br),
                                      vkgmm_buffer_whole(bd), vkgmm_buffer_whole(bdl), vkgmm_buffer_whole(bdr)};
  memset(dl, 0xff, sizeof dl); /* NaN: the rows past the groups and the empty group's d_rhs are written 0 */
  memset(dr, 0xff, sizeof dr);
  CHECK(vkgmm_buffer_upload(bdl, dl, sizeof dl, 0) == VKGMM_OK);
  CHECK(vkgmm_buffer_upload(bdr, dr, sizeof dr, 0) == VKGMM_OK);
  CHECK(vkgmm_gmm_backward_plan_run(ctx, bw, &bops) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdl, dl, sizeof dl, 0) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdr, dr, sizeof dr, 0) == VKGMM_OK);
  bad = 0;
  int start = 0;
  for (int g = 0; g <= G; ++g) {
    const int rows = g < G ? sizes[g] : M - start;
    for (int r = start; r < start + rows; ++r)
      for (int i = 0; i < K; ++i) {
        double s = 0;
        if (g < G)
          for (int j = 0; j < N; ++j) s += (double)d[r * N + j] * rhs[(g * K + i) * N + j];
        bad += !near(dl[r * K + i], s);
      }
    start += rows;
  }
  for (int i = 0; i < G * K * N; ++i) bad += !near(dr[i], tout[i]);
  CHECK(bad == 0);

  /* With a fused bias the backward adds d_bias (each group's column sums of d); with accumulate, d_lhs's
   * rows of the window's groups are written and the others keep what the view holds (ones here), as
   * without a bias: no row is shared between shards. */
  f.bias = 1;
  vkgmm_gmm_backward_options bopt = {sizeof bopt, 1, 7};
  vkgmm_gmm_backward_plan* bwb = NULL;
  CHECK(vkgmm_gmm_backward_plan_create_with_options(ctx, &f, &bopt, &bwb) == VKGMM_INVALID_ARGUMENT && !bwb);
  bopt.reserved_tail = 0;
  CHECK(vkgmm_gmm_backward_plan_create_with_options(ctx, &f, &bopt, &bwb) == VKGMM_OK);
  vkgmm_gmm_backward_sizes bbs = {sizeof bbs};
  CHECK(vkgmm_gmm_backward_plan_sizes(bwb, &bbs) == VKGMM_OK);
  CHECK(bbs.bias == G * N * 4 && bbs.d_bias == G * N * 4 && bbs.ids == 0 && bbs.d_weights == 0 && bbs.workspace > 0);
  float bias[G * N], ones[M * K], db[G * N], dl1[M * K], dr1[G * K * N];
  fill(bias, G * N, 5);
  for (int i = 0; i < M * K; ++i) ones[i] = 1.0f;
  vkgmm_buffer *bb = make_buffer(ctx, bias, G * N), *bdb = make_buffer(ctx, NULL, G * N),
               *bdl1 = make_buffer(ctx, ones, M * K);
  vkgmm_gmm_backward_operands bops1 = bops;
  bops1.d_lhs = vkgmm_buffer_whole(bdl1);
  bops1.bias = vkgmm_buffer_whole(bb);
  bops1.d_bias = vkgmm_buffer_whole(bdb);
  CHECK(vkgmm_gmm_backward_plan_run(ctx, bwb, &bops1) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdl1, dl1, sizeof dl1, 0) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdr, dr1, sizeof dr1, 0) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdb, db, sizeof db, 0) == VKGMM_OK);
  bad = 0;
  int active_rows = 0;
  for (int g = 0; g < G; ++g) active_rows += sizes[g];
  for (int i = 0; i < M * K; ++i) bad += !near(dl1[i], i < active_rows * K ? dl[i] : 1.0);
  for (int i = 0; i < G * K * N; ++i) bad += !near(dr1[i], tout[i]);
  start = 0;
  for (int g = 0; g < G; ++g) {
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int r = start; r < start + sizes[g]; ++r) s += d[r * N + j];
      bad += !near(db[g * N + j], s);
    }
    start += sizes[g];
  }
  CHECK(bad == 0);
  vkgmm_gmm_backward_plan_destroy(bwb);
  vkgmm_buffer_destroy(bb);
  vkgmm_buffer_destroy(bdb);
  vkgmm_buffer_destroy(bdl1);

  vkgmm_gmm_backward_plan_destroy(bw);
  vkgmm_tgmm_plan_destroy(plan);
  vkgmm_buffer_destroy(bl);
  vkgmm_buffer_destroy(bd);
  vkgmm_buffer_destroy(bo);
  vkgmm_buffer_destroy(br);
  vkgmm_buffer_destroy(bdl);
  vkgmm_buffer_destroy(bdr);
}

/* ----- group sizes on the device ----------------------------------------------------------------- */

/* What the device makes of sizes that break the contract (vkgmm_device_status_bits): a negative size
 * as 0, every group's end clamped at M; *status gets the bits the status word must hold. */
static void taken_sizes(const int32_t* in, int32_t* out, uint32_t* status) {
  int64_t at = 0;
  *status = 0;
  for (int g = 0; g < G; ++g) {
    if (in[g] < 0) *status |= VKGMM_DEVICE_STATUS_NEGATIVE_SIZE;
    int64_t end = at + (in[g] > 0 ? in[g] : 0);
    if (end > M) {
      *status |= VKGMM_DEVICE_STATUS_SUM_ABOVE_M;
      end = M;
    }
    out[g] = (int32_t)(end - at);
    at = end;
  }
}

/* Sizes to put on the device: the contract's, then hostile ones (negative, a sum above M, the extremes). */
#define CASES 4
static const int32_t device_cases[CASES][G] = {
    {3, 0, 5}, {4, -2, 20}, {-2147483647 - 1, 2147483647, 2147483647}, {0, 0, 0}};

/* gmm and tgmm with device_group_count = G: the sizes uploaded to a buffer (here by the host; in an app
 * by its own shaders), an app workspace, and a status word poisoned before each run. */
static void test_device_sizes(vkgmm_context* ctx) {
  vkgmm_gmm_problem p = gmm_problem();
  p.group_sizes = NULL;
  p.num_groups = 0;
  p.device_group_count = G;
  vkgmm_gmm_plan* plan = NULL;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_OK);
  vkgmm_tgmm_problem q;
  memset(&q, 0, sizeof q);
  q.struct_size = sizeof q;
  q.m = M, q.k = K, q.n = N, q.device_group_count = G, q.expected_group_rows = 3, q.lhs_mk = 1;
  vkgmm_tgmm_plan* tplan = NULL;
  CHECK(vkgmm_tgmm_plan_create(ctx, &q, &tplan) == VKGMM_OK);
  if (!plan || !tplan) return;
  vkgmm_operand_sizes s = {sizeof s}, ts = {sizeof ts};
  /* gmm's M rows are a decode's: it reads the sizes in the kernel, with no workspace (given one, it leaves it
   * alone); tgmm's build needs one. */
  CHECK(vkgmm_gmm_plan_sizes(plan, &s) == VKGMM_OK);
  CHECK(vkgmm_tgmm_plan_sizes(tplan, &ts) == VKGMM_OK && ts.workspace > 0);

  float d[M * N], tout[G * K * N];
  fill(d, M * N, 3);
  vkgmm_buffer *bl = make_buffer(ctx, lhs, M * K), *br = make_buffer(ctx, rhs, G * K * N),
               *bo = make_buffer(ctx, NULL, M * N), *bd = make_buffer(ctx, d, M * N),
               *bto = make_buffer(ctx, NULL, G * K * N), *bs = NULL, *bw = NULL, *bst = NULL;
  CHECK(vkgmm_buffer_create(ctx, sizeof(int32_t) * G, &bs) == VKGMM_OK);
  CHECK(vkgmm_buffer_create(ctx, s.workspace > ts.workspace ? s.workspace : ts.workspace, &bw) == VKGMM_OK);
  CHECK(vkgmm_buffer_create(ctx, 8, &bst) == VKGMM_OK); /* the status word at offset 4 */
  if (!bs || !bw || !bst) return;
  const vkgmm_buffer_view status = {vkgmm_buffer_whole(bst).buffer, 4, 4};
  vkgmm_gmm_operands ops = {sizeof ops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(br), vkgmm_buffer_whole(bo), {0},
                            vkgmm_buffer_whole(bs), vkgmm_buffer_whole(bw), status};
  vkgmm_tgmm_operands tops = {sizeof tops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(bd), vkgmm_buffer_whole(bto),
                              {0}, vkgmm_buffer_whole(bs), {0}, status}; /* the plan's own workspace */

  for (int c = 0; c < CASES; ++c) {
    int32_t taken[G];
    uint32_t want_status, got_status[2], poison[2] = {0xdeadbeefu, 0xdeadbeefu};
    taken_sizes(device_cases[c], taken, &want_status);
    CHECK(vkgmm_buffer_upload(bs, device_cases[c], sizeof device_cases[c], 0) == VKGMM_OK);

    memset(out, 0xff, sizeof out);
    CHECK(vkgmm_buffer_upload(bo, out, sizeof out, 0) == VKGMM_OK);
    CHECK(vkgmm_buffer_upload(bst, poison, sizeof poison, 0) == VKGMM_OK);
    CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_OK);
    CHECK(vkgmm_buffer_download(bo, out, sizeof out, 0) == VKGMM_OK);
    CHECK(vkgmm_buffer_download(bst, got_status, sizeof got_status, 0) == VKGMM_OK);
    int bad = 0;
    for (int r = 0; r < M; ++r)
      for (int j = 0; j < N; ++j) bad += !near(out[r * N + j], gmm_want_for(taken, r, j));
    CHECK(bad == 0);
    CHECK(got_status[1] == want_status);
    CHECK(got_status[0] == 0xdeadbeefu); /* the word before the view: untouched */
    if (bad || got_status[1] != want_status) fprintf(stderr, "  gmm, device sizes case %d\n", c);

    CHECK(vkgmm_buffer_upload(bst, poison, sizeof poison, 0) == VKGMM_OK);
    CHECK(vkgmm_tgmm_plan_run(ctx, tplan, &tops) == VKGMM_OK);
    CHECK(vkgmm_buffer_download(bto, tout, sizeof tout, 0) == VKGMM_OK);
    CHECK(vkgmm_buffer_download(bst, got_status, sizeof got_status, 0) == VKGMM_OK);
    bad = tgmm_mismatches(taken, d, tout);
    CHECK(bad == 0);
    CHECK(got_status[1] == want_status);
    if (bad || got_status[1] != want_status) fprintf(stderr, "  tgmm, device sizes case %d\n", c);
  }

  /* The backward on the same device sizes: d_rhs is the tgmm above (the last case's sizes). */
  vkgmm_gmm_backward_plan* bw_plan = NULL;
  CHECK(vkgmm_gmm_backward_plan_create(ctx, &p, &bw_plan) == VKGMM_OK);
  if (bw_plan) {
    vkgmm_gmm_backward_sizes b = {sizeof b};
    CHECK(vkgmm_gmm_backward_plan_sizes(bw_plan, &b) == VKGMM_OK && b.workspace >= s.workspace);
    vkgmm_buffer *bdl = make_buffer(ctx, NULL, M * K), *bdr = make_buffer(ctx, NULL, G * K * N);
    CHECK(vkgmm_buffer_upload(bs, sizes, sizeof sizes, 0) == VKGMM_OK);
    vkgmm_gmm_backward_operands bops = {sizeof bops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(br),
                                        vkgmm_buffer_whole(bd), vkgmm_buffer_whole(bdl), vkgmm_buffer_whole(bdr),
                                        vkgmm_buffer_whole(bs), {0}, status};
    CHECK(vkgmm_gmm_backward_plan_run(ctx, bw_plan, &bops) == VKGMM_OK);
    float dr[G * K * N];
    CHECK(vkgmm_buffer_download(bdr, dr, sizeof dr, 0) == VKGMM_OK);
    CHECK(tgmm_mismatches(sizes, d, dr) == 0);
    vkgmm_gmm_backward_plan_destroy(bw_plan);
    vkgmm_buffer_destroy(bdl);
    vkgmm_buffer_destroy(bdr);
  }

  /* Views that break the rules: refused before anything is recorded, naming the view. */
  vkgmm_gmm_operands bad_ops = ops;
  bad_ops.status.size = 2; /* a status word of 2 bytes */
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &bad_ops) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "status") != NULL);
  bad_ops = ops;
  bad_ops.status = (vkgmm_buffer_view){ops.status.buffer, 2, 4}; /* not at a word */
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &bad_ops) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "status") != NULL);
  bad_ops = ops;
  bad_ops.workspace.size = s.workspace - 4;
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &bad_ops) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "workspace") != NULL);
  bad_ops = ops;
  bad_ops.group_sizes.buffer = VK_NULL_HANDLE;
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &bad_ops) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "group_sizes") != NULL);
  /* Host and device sizes at once; a negative count. */
  vkgmm_gmm_plan* none = NULL;
  p.group_sizes = sizes;
  p.num_groups = G;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &none) == VKGMM_INVALID_ARGUMENT && none == NULL);
  CHECK(strstr(message(), "device_group_count") != NULL);
  p = gmm_problem();
  p.device_group_count = -1;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &none) == VKGMM_INVALID_ARGUMENT && none == NULL);
  /* The device views on a host-sizes plan. */
  p = gmm_problem();
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &none) == VKGMM_OK);
  CHECK(vkgmm_gmm_plan_run(ctx, none, &ops) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "on the host") != NULL);
  vkgmm_gmm_plan_destroy(none);

  vkgmm_gmm_plan_destroy(plan);
  vkgmm_tgmm_plan_destroy(tplan);
  vkgmm_buffer* all[] = {bl, br, bo, bd, bto, bs, bw, bst};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) vkgmm_buffer_destroy(all[i]);
}

static void test_errors(vkgmm_context* ctx) {
  /* sum(group_sizes) > m: refused with a message naming the rule; nothing created. */
  vkgmm_gmm_problem p = gmm_problem();
  p.m = 4;
  vkgmm_gmm_plan* plan = (vkgmm_gmm_plan*)&p; /* must be reset to NULL */
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT);
  CHECK(plan == NULL);
  CHECK(strstr(message(), "group_sizes") != NULL);

  p = gmm_problem();
#define COUNT_DTYPE_(name, NAME, value, values, bytes, ggml) +1
  p.lhs_type = (vkgmm_dtype)(0 VKGMM_DTYPES(COUNT_DTYPE_)); /* one past the last type */
#undef COUNT_DTYPE_
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "lhs_type") != NULL);
  p = gmm_problem();
  p.lhs_type = VKGMM_Q4_0; /* a block format is for rhs only */
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT);
  CHECK(plan == NULL);
  CHECK(strstr(message(), "lhs") != NULL);
  p = gmm_problem();
  p.num_rhs_groups = -2;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT);
  p = gmm_problem();
  p.tiling.tm = 16; /* a partial tiling is a non-positive one */
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT);

  CHECK(vkgmm_gmm_plan_create(ctx, NULL, &plan) == VKGMM_INVALID_ARGUMENT);
  CHECK(vkgmm_gmm_plan_create(NULL, &p, &plan) == VKGMM_INVALID_ARGUMENT);
  CHECK(vkgmm_buffer_create(ctx, 0, NULL) == VKGMM_INVALID_ARGUMENT);
  /* Borrowing: a null VkBuffer, and one that is a vkgmm buffer already, are refused (the positive path:
   * DeviceTest.BorrowedAppBuffersTakeTheTexelPath). */
  vkgmm_buffer* borrowed = NULL;
  CHECK(vkgmm_buffer_borrow(ctx, VK_NULL_HANDLE, 16, 1, &borrowed) == VKGMM_INVALID_ARGUMENT && borrowed == NULL);
  vkgmm_buffer* own = NULL;
  CHECK(vkgmm_buffer_create(ctx, 16, &own) == VKGMM_OK);
  CHECK(vkgmm_buffer_borrow(ctx, vkgmm_buffer_whole(own).buffer, 16, 1, &borrowed) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "already") != NULL && borrowed == NULL);
  /* ... and so through vkgmm_buffer_borrow_usage, whatever the usage flags say. */
  CHECK(vkgmm_buffer_borrow_usage(ctx, VK_NULL_HANDLE, 16, VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT, &borrowed) ==
            VKGMM_INVALID_ARGUMENT &&
        borrowed == NULL);
  CHECK(vkgmm_buffer_borrow_usage(ctx, vkgmm_buffer_whole(own).buffer, 16,
                                  VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
                                  &borrowed) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "already") != NULL && borrowed == NULL);
  vkgmm_buffer_destroy(own);

  vkgmm_borrowed_device none;
  memset(&none, 0, sizeof none);
  none.struct_size = sizeof none;
  vkgmm_context* wrapped = NULL;
  CHECK(vkgmm_context_wrap(&none, &wrapped) == VKGMM_INVALID_ARGUMENT && wrapped == NULL);
  CHECK(strstr(message(), "instance") != NULL);
  none.reserved_tail = 1;
  CHECK(vkgmm_context_wrap(&none, &wrapped) == VKGMM_INVALID_ARGUMENT && wrapped == NULL);
  CHECK(strstr(message(), "reserved_tail") != NULL);
  /* One built against the vkgmm.h before matrix_units: read up to there (and refused for its null
   * instance, not for its size). */
  none.reserved_tail = 0;
  none.struct_size = offsetof(vkgmm_borrowed_device, matrix_units);
  CHECK(vkgmm_context_wrap(&none, &wrapped) == VKGMM_INVALID_ARGUMENT && wrapped == NULL);
  CHECK(strstr(message(), "instance") != NULL);

  /* An unknown matrix extension is refused by name, before any device is made; an older caller's options
   * (before matrix_extension) are read up to there: the name past its struct_size is never read. */
  vkgmm_context_options bad_ext;
  memset(&bad_ext, 0, sizeof bad_ext);
  bad_ext.struct_size = sizeof bad_ext;
  bad_ext.matrix_extension = "VK_AMD_matrix";
  vkgmm_context* unmade = NULL;
  CHECK(vkgmm_context_create(&bad_ext, &unmade) == VKGMM_INVALID_ARGUMENT && unmade == NULL);
  CHECK(strstr(message(), "matrix_extension: 'VK_AMD_matrix'") != NULL);
  bad_ext.struct_size = offsetof(vkgmm_context_options, matrix_extension);
  CHECK(vkgmm_context_create(&bad_ext, &unmade) == VKGMM_OK && unmade != NULL);
  vkgmm_context_destroy(unmade);

  /* A successful call clears the message. */
  vkgmm_device_requirements req = {sizeof req};
  CHECK(vkgmm_device_requirements_query(VK_NULL_HANDLE, &req) == VKGMM_OK);
  CHECK(strcmp(vkgmm_last_error_message(), "") == 0);
  CHECK(req.min_api_version >= VK_API_VERSION_1_2 && req.required_extension_count == 1 && req.supported == 1);
  CHECK(strcmp(req.required_extensions[0], "VK_KHR_push_descriptor") == 0);
  CHECK(req.matrix_extension == NULL);
  /* The matrix units take the instance: refused without one, naming it. */
  CHECK(vkgmm_device_requirements_query_instance(VK_NULL_HANDLE, VK_NULL_HANDLE, NULL, &req) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "instance") != NULL);
  /* An older caller's struct (before matrix_extension) is written up to its size. */
  union {
    vkgmm_device_requirements req;
    unsigned char bytes[sizeof(vkgmm_device_requirements)];
  } older;
  memset(&older, 0xab, sizeof older);
  older.req.struct_size = offsetof(vkgmm_device_requirements, matrix_extension);
  CHECK(vkgmm_device_requirements_query(VK_NULL_HANDLE, &older.req) == VKGMM_OK && older.req.supported == 1);
  CHECK(older.bytes[offsetof(vkgmm_device_requirements, matrix_extension)] == 0xab);

  vkgmm_gmm_plan_destroy(NULL); /* NULL is fine everywhere a handle is destroyed */
  vkgmm_buffer_destroy(NULL);
  vkgmm_context_destroy(NULL);
}

/* struct_size: how the C structs grow without breaking callers built against another vkgmm.h. */
struct newer_problem { /* a vkgmm_gmm_problem as a later vkgmm.h might declare it: one field more */
  vkgmm_gmm_problem p;
  int64_t future_field;
};
struct newer_sizes {
  vkgmm_operand_sizes s;
  uint64_t future_field;
};

static void test_struct_sizes(vkgmm_context* ctx) {
  vkgmm_gmm_plan* plan = NULL;
  /* Not set (0), or smaller than any vkgmm_gmm_problem: refused, naming struct_size. */
  vkgmm_gmm_problem p = gmm_problem();
  p.struct_size = 0;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT && plan == NULL);
  CHECK(strstr(message(), "struct_size") != NULL);
  p.struct_size = offsetof(vkgmm_gmm_problem, reserved); /* before the first published size */
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT && plan == NULL);
  /* One built against the vkgmm.h before device group sizes: accepted, on the host path. */
  p.struct_size = offsetof(vkgmm_gmm_problem, device_group_count);
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_OK && plan != NULL);
  vkgmm_gmm_plan_destroy(plan);
  plan = NULL;
  /* The reserved field that keeps the struct free of tail padding must stay 0. */
  p = gmm_problem();
  p.reserved = 1;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT && plan == NULL);
  CHECK(strstr(message(), "reserved") != NULL);

  /* A newer caller: accepted while the fields this vkgmm does not know are zero (their defaults). */
  struct newer_problem np;
  memset(&np, 0, sizeof np);
  np.p = gmm_problem();
  np.p.struct_size = sizeof np;
  CHECK(vkgmm_gmm_plan_create(ctx, &np.p, &plan) == VKGMM_OK && plan != NULL);
  /* ... and vkgmm fills a newer caller's output up to its struct_size, zero past what it knows. */
  struct newer_sizes ns;
  memset(&ns, 0xff, sizeof ns);
  ns.s.struct_size = sizeof ns;
  CHECK(vkgmm_gmm_plan_sizes(plan, &ns.s) == VKGMM_OK);
  CHECK(ns.s.struct_size == sizeof ns && ns.s.lhs == M * K * 4 && ns.s.metadata > 0 && ns.future_field == 0);
  ns.s.struct_size = 0;
  CHECK(vkgmm_gmm_plan_sizes(plan, &ns.s) == VKGMM_INVALID_ARGUMENT);
  /* Operands too: a record with struct_size 0 is refused and records nothing. */
  vkgmm_gmm_operands ops;
  memset(&ops, 0, sizeof ops);
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "ops->struct_size") != NULL);
  vkgmm_gmm_plan_destroy(plan);
  plan = NULL;

  /* A newer field set to something this vkgmm cannot honour: refused as unsupported, not ignored. */
  np.future_field = 1;
  CHECK(vkgmm_gmm_plan_create(ctx, &np.p, &plan) == VKGMM_UNSUPPORTED && plan == NULL);
  CHECK(strstr(message(), "struct_size") != NULL);
}

/* ----- routing by expert ids and the epilogue: the fields and their rules ---------------------------- */

/* The new fields' rules surface as VKGMM_INVALID_ARGUMENT naming the C field, and callers built against
 * the vkgmm.h before them (smaller struct_size) get no routing and no epilogue, whatever lies past their
 * structs. (The routed runs themselves are tested in C++ and through `vkgmm run`.) */
/* vkgmm_gmm_plan_create refuses p with VKGMM_INVALID_ARGUMENT, a message naming `field`, and no plan. */
static void expect_refused(vkgmm_context* ctx, const vkgmm_gmm_problem* p, const char* field) {
  vkgmm_gmm_plan* plan = (vkgmm_gmm_plan*)&plan; /* must be reset to NULL */
  CHECK(vkgmm_gmm_plan_create(ctx, p, &plan) == VKGMM_INVALID_ARGUMENT && plan == NULL);
  if (!strstr(message(), field)) {
    fprintf(stderr, "  the message does not name %s: %s\n", field, vkgmm_last_error_message());
    ++failures;
  }
}

static void test_routing_fields(vkgmm_context* ctx) {
  CHECK(VKGMM_DEVICE_STATUS_BAD_ID == 8);
  CHECK(VKGMM_ACTIVATION_NONE == 0 && VKGMM_ACTIVATION_SWIGLU == 1 && VKGMM_ACTIVATION_SWIGLU_OAI == 2 &&
        VKGMM_ACTIVATION_GEGLU == 3);
  vkgmm_gmm_problem p = gmm_problem();
  p.top_k = -1;
  expect_refused(ctx, &p, "top_k");
  p = gmm_problem();
  p.num_experts = -3;
  expect_refused(ctx, &p, "num_experts");
  p = gmm_problem(); /* routing fields without top_k */
  p.combine = 1;
  expect_refused(ctx, &p, "combine");
  p = gmm_problem();
  p.lhs_per_slot = 1;
  expect_refused(ctx, &p, "lhs_per_slot");
  p = gmm_problem();
  p.num_experts = 4;
  expect_refused(ctx, &p, "num_experts");
  p = gmm_problem();
  p.activation = (vkgmm_activation)5;
  expect_refused(ctx, &p, "activation");
  p = gmm_problem(); /* group sizes and ids at once */
  p.top_k = 2;
  p.num_rhs_groups = G;
  expect_refused(ctx, &p, "group_sizes");
  p.group_sizes = NULL;
  p.num_groups = 0;
  p.device_group_count = G;
  expect_refused(ctx, &p, "device_group_count");
  p.device_group_count = 0;
  p.num_rhs_groups = 0; /* E_local is required with ids */
  expect_refused(ctx, &p, "num_rhs_groups");

  /* More groups than a plan takes: refused by the count alone, before vkgmm reads that many sizes (the
   * array holds G; a read past it fails under the sanitizers). */
  p = gmm_problem();
  p.num_groups = 65536;
  vkgmm_gmm_plan* too_many = NULL;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &too_many) == VKGMM_UNSUPPORTED && too_many == NULL);
  CHECK(strstr(message(), "num_groups") != NULL);
  p.num_groups = (int64_t)1 << 40;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &too_many) == VKGMM_UNSUPPORTED && too_many == NULL);
  CHECK(strstr(message(), "num_groups") != NULL);

  /* A problem from the vkgmm.h before routing: what lies past its struct_size is not read. */
  p = gmm_problem();
  p.struct_size = offsetof(vkgmm_gmm_problem, top_k);
  p.top_k = -7, p.combine = 3, p.num_experts = -1, p.bias = 1, p.activation = (vkgmm_activation)9;
  vkgmm_gmm_plan* plan = NULL;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_OK && plan != NULL);
  if (!plan) return;
  /* ... and operands from before ids / weights / bias: a plain gmm, garbage past the caller's struct. */
  vkgmm_buffer *bl = make_buffer(ctx, lhs, M * K), *br = make_buffer(ctx, rhs, G * K * N),
               *bo = make_buffer(ctx, NULL, M * N);
  vkgmm_gmm_operands ops;
  memset(&ops, 0, sizeof ops);
  ops.struct_size = offsetof(vkgmm_gmm_operands, ids);
  ops.lhs = vkgmm_buffer_whole(bl), ops.rhs = vkgmm_buffer_whole(br), ops.out = vkgmm_buffer_whole(bo);
  ops.ids = ops.weights = ops.bias = vkgmm_buffer_whole(bl); /* past struct_size: ignored */
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bo, out, sizeof out, 0) == VKGMM_OK);
  int wrong = 0;
  for (int r = 0; r < M; ++r)
    for (int j = 0; j < N; ++j) wrong += !near(out[r * N + j], gmm_want(r, j));
  CHECK(wrong == 0);
  vkgmm_gmm_plan_destroy(plan);
  vkgmm_buffer_destroy(bl);
  vkgmm_buffer_destroy(br);
  vkgmm_buffer_destroy(bo);
}

/* ----- a routed forward saving its pre-activation, and the backward reading it ------------------------- */

/* T = M tokens, top-2 of the G experts, per slot, SwiGLU over N product columns: the saved pre-activation
 * is each slot's product (no bias), and the backward gives the same bits from it as when it recomputes. */
static void test_saved_pre_activation(vkgmm_context* ctx) {
  vkgmm_gmm_problem p = gmm_problem();
  p.save_pre_activation = 1; /* group sizes: nothing to save it in */
  expect_refused(ctx, &p, "save_pre_activation");
  p = gmm_problem();
  p.group_sizes = NULL, p.num_groups = 0, p.num_rhs_groups = G, p.top_k = 2, p.num_experts = G;
  p.activation = VKGMM_ACTIVATION_SWIGLU;
  p.reserved_tail = 5;
  expect_refused(ctx, &p, "reserved_tail");
  p.reserved_tail = 0;
  vkgmm_gmm_plan* plain = NULL;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plain) == VKGMM_OK);
  vkgmm_buffer_view v;
  CHECK(vkgmm_gmm_plan_saved_pre_activation(plain, vkgmm_buffer_whole(NULL), &v) == VKGMM_INVALID_ARGUMENT &&
        strstr(message(), "saves none"));
  vkgmm_gmm_plan_destroy(plain);
  p.save_pre_activation = 1;
  vkgmm_gmm_plan* plan = NULL;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_OK && plan != NULL);
  if (!plan) return;
  vkgmm_operand_sizes s = {sizeof s};
  CHECK(vkgmm_gmm_plan_sizes(plan, &s) == VKGMM_OK && s.workspace > 0);
  int32_t ids[M * 2];
  for (int i = 0; i < M * 2; ++i) ids[i] = i == 5 ? -1 : (i / 2 + i % 2) % G;
  vkgmm_buffer* bi = NULL;
  CHECK(vkgmm_buffer_create(ctx, sizeof ids, &bi) == VKGMM_OK && vkgmm_buffer_upload(bi, ids, sizeof ids, 0) == VKGMM_OK);
  vkgmm_buffer *bl = make_buffer(ctx, lhs, M * K), *br = make_buffer(ctx, rhs, G * K * N),
               *bo = make_buffer(ctx, NULL, M * 2 * N / 2), *bws = make_buffer(ctx, NULL, s.workspace / 4);
  vkgmm_gmm_operands ops;
  memset(&ops, 0, sizeof ops);
  ops.struct_size = sizeof ops;
  ops.lhs = vkgmm_buffer_whole(bl), ops.rhs = vkgmm_buffer_whole(br), ops.out = vkgmm_buffer_whole(bo);
  ops.ids = vkgmm_buffer_whole(bi), ops.workspace = vkgmm_buffer_whole(bws);
  CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_OK);
  CHECK(vkgmm_gmm_plan_saved_pre_activation(plan, ops.workspace, &v) == VKGMM_OK);
  CHECK(v.buffer == ops.workspace.buffer && v.size == M * 2 * N * 4 && v.offset + v.size <= s.workspace);
  float pre[M * 2 * N];
  CHECK(vkgmm_buffer_download(bws, pre, sizeof pre, (size_t)v.offset) == VKGMM_OK);
  int wrong = 0;
  for (int slot = 0; slot < M * 2; ++slot)
    for (int c = 0; ids[slot] >= 0 && c < N; ++c) {
      double sum = 0;
      for (int i = 0; i < K; ++i) sum += (double)lhs[(slot / 2) * K + i] * rhs[(ids[slot] * K + i) * N + c];
      wrong += !near(pre[slot * N + c], sum);
    }
  CHECK(wrong == 0);

  vkgmm_gmm_backward_plan* bw = NULL;
  CHECK(vkgmm_gmm_backward_plan_create(ctx, &p, &bw) == VKGMM_OK);
  vkgmm_gmm_backward_sizes bs = {sizeof bs};
  CHECK(vkgmm_gmm_backward_plan_sizes(bw, &bs) == VKGMM_OK && bs.pre_activation == v.size);
  float d[M * 2 * N / 2], recomputed[M * K], saved[M * K];
  fill(d, M * N, 9);
  vkgmm_buffer *bd = make_buffer(ctx, d, M * N), *bdl = make_buffer(ctx, NULL, M * K),
               *bdr = make_buffer(ctx, NULL, G * K * N);
  vkgmm_gmm_backward_operands b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  b.lhs = ops.lhs, b.rhs = ops.rhs, b.d_out = vkgmm_buffer_whole(bd), b.d_lhs = vkgmm_buffer_whole(bdl);
  b.d_rhs = vkgmm_buffer_whole(bdr), b.ids = ops.ids;
  CHECK(vkgmm_gmm_backward_plan_run(ctx, bw, &b) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdl, recomputed, sizeof recomputed, 0) == VKGMM_OK);
  b.pre_activation = v;
  CHECK(vkgmm_gmm_backward_plan_run(ctx, bw, &b) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdl, saved, sizeof saved, 0) == VKGMM_OK);
  CHECK(memcmp(recomputed, saved, sizeof saved) == 0);
  int nonzero = 0;
  for (int i = 0; i < M * K; ++i) nonzero += saved[i] != 0.0f;
  CHECK(nonzero > M * K / 2);
  vkgmm_gmm_backward_plan_destroy(bw);
  vkgmm_gmm_plan_destroy(plan);
  vkgmm_buffer* all[] = {bi, bl, br, bo, bws, bd, bdl, bdr};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) vkgmm_buffer_destroy(all[i]);
}

/* ----- top-k routing: logits in, the ids and weights the routed gmm reads ------------------------------ */

/* Two tokens, four experts, top 2, renormalised: each token's picks by hand, weights a softmax of the two. */
static void test_top_k(vkgmm_context* ctx) {
  const float logits[8] = {0.5f, 2.0f, -1.0f, 1.0f, /* experts 1, 3 */
                           3.0f, 3.0f, 0.0f, 4.0f}; /* expert 3, then the tie 0 before 1 */
  const int32_t want_ids[4] = {1, 3, 3, 0};
  const double e1 = exp(-1.0); /* exp(1 - 2) and exp(3 - 4) */
  const double want_w[4] = {1 / (1 + e1), e1 / (1 + e1), 1 / (1 + e1), e1 / (1 + e1)};
  vkgmm_top_k_problem p = {sizeof p, 2, 4, 2, 1};
  vkgmm_top_k_plan* plan = NULL;
  p.reserved_tail = 3;
  CHECK(vkgmm_top_k_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT && plan == NULL &&
        strstr(message(), "reserved_tail = 3 must be 0"));
  p.reserved_tail = 0;
  CHECK(vkgmm_top_k_plan_create(ctx, &p, &plan) == VKGMM_OK && plan != NULL);
  if (!plan) return;
  vkgmm_top_k_sizes s = {sizeof s};
  CHECK(vkgmm_top_k_plan_sizes(plan, &s) == VKGMM_OK && s.logits == 32 && s.ids == 16 && s.weights == 16);
  vkgmm_buffer *bl = make_buffer(ctx, logits, 8), *bi = make_buffer(ctx, NULL, 4), *bw = make_buffer(ctx, NULL, 4);
  vkgmm_top_k_operands ops = {sizeof ops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(bi), vkgmm_buffer_whole(bw)};
  CHECK(vkgmm_top_k_plan_run(ctx, plan, &ops) == VKGMM_OK);
  int32_t ids[4];
  float w[4];
  CHECK(vkgmm_buffer_download(bi, ids, sizeof ids, 0) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bw, w, sizeof w, 0) == VKGMM_OK);
  for (int i = 0; i < 4; ++i) CHECK(ids[i] == want_ids[i] && near(w[i], want_w[i]));
  ops.weights = ops.ids; /* overlapping outputs: refused, naming them */
  CHECK(vkgmm_top_k_plan_run(ctx, plan, &ops) == VKGMM_INVALID_ARGUMENT && strstr(message(), "ids"));
  p.top_k = 5; /* more than the experts */
  vkgmm_top_k_plan* refused = (vkgmm_top_k_plan*)&refused;
  CHECK(vkgmm_top_k_plan_create(ctx, &p, &refused) == VKGMM_INVALID_ARGUMENT && refused == NULL &&
        strstr(message(), "top_k"));
  vkgmm_top_k_plan_destroy(plan);
  vkgmm_buffer_destroy(bl);
  vkgmm_buffer_destroy(bi);
  vkgmm_buffer_destroy(bw);
}

/* The backward of the same two tokens by hand: renormalized, d_logits[e] = w_j * (d_w_j - s) for the
 * expert e of slot j (0 for the others); without renormalize, over all four experts p_e * (g_e - s). A -1
 * id in the second token adds nothing; accumulate adds to what d_logits holds. */
static void test_top_k_backward(vkgmm_context* ctx) {
  const float logits[8] = {0.5f, 2.0f, -1.0f, 1.0f, 3.0f, 3.0f, 0.0f, 4.0f};
  const int32_t ids[4] = {1, 3, -1, 0};
  const float d_w[4] = {1.0f, -2.0f, 5.0f, 0.5f};
  for (int renormalize = 0; renormalize <= 1; ++renormalize) {
    /* The forward's weights for these ids (the -1 slot's is never read: 0 here). */
    double p[8], w[4] = {0, 0, 0, 0}, want[8];
    for (int t = 0; t < 2; ++t) {
      double total = 0;
      for (int e = 0; e < 4; ++e) total += p[t * 4 + e] = exp(logits[t * 4 + e]);
      for (int e = 0; e < 4; ++e) p[t * 4 + e] /= total;
    }
    const double e1 = exp(-1.0); /* exp(1 - 2): the chosen pair of token 0, renormalized */
    w[0] = renormalize ? 1 / (1 + e1) : p[1];
    w[1] = renormalize ? e1 / (1 + e1) : p[3];
    w[3] = renormalize ? 1.0 : p[4]; /* token 1: one valid slot */
    for (int t = 0; t < 2; ++t) {
      const double s = d_w[2 * t] * w[2 * t] + d_w[2 * t + 1] * w[2 * t + 1];
      for (int e = 0; e < 4; ++e) {
        double g = 0, chosen = 0;
        for (int j = 2 * t; j < 2 * t + 2; ++j)
          if (ids[j] == e) g += d_w[j], chosen += w[j] * (d_w[j] - s);
        want[t * 4 + e] = renormalize ? chosen : p[t * 4 + e] * (g - s);
      }
    }
    float wf[4];
    for (int j = 0; j < 4; ++j) wf[j] = (float)w[j];
    vkgmm_top_k_problem fwd = {sizeof fwd, 2, 4, 2, renormalize ? 1 : -1}; /* 0 would be the default, on */
    vkgmm_top_k_backward_options add = {sizeof add, 1, 0};
    vkgmm_top_k_backward_plan *plan = NULL, *accumulating = NULL;
    CHECK(vkgmm_top_k_backward_plan_create(ctx, &fwd, NULL, &plan) == VKGMM_OK && plan != NULL);
    CHECK(vkgmm_top_k_backward_plan_create(ctx, &fwd, &add, &accumulating) == VKGMM_OK && accumulating != NULL);
    if (!plan || !accumulating) return;
    vkgmm_top_k_backward_sizes sz = {sizeof sz};
    CHECK(vkgmm_top_k_backward_plan_sizes(plan, &sz) == VKGMM_OK && sz.logits == 32 && sz.ids == 16 &&
          sz.weights == 16 && sz.d_weights == 16 && sz.d_logits == 32);
    vkgmm_buffer *bl = make_buffer(ctx, logits, 8), *bi = make_buffer(ctx, (const float*)(const void*)ids, 4),
                 *bw = make_buffer(ctx, wf, 4), *bd = make_buffer(ctx, d_w, 4), *bo = make_buffer(ctx, NULL, 8);
    vkgmm_top_k_backward_operands ops = {sizeof ops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(bi),
                                         vkgmm_buffer_whole(bw), vkgmm_buffer_whole(bd), vkgmm_buffer_whole(bo)};
    float got[8];
    CHECK(vkgmm_top_k_backward_plan_run(ctx, plan, &ops) == VKGMM_OK);
    CHECK(vkgmm_top_k_backward_plan_run(ctx, accumulating, &ops) == VKGMM_OK); /* twice the gradient */
    CHECK(vkgmm_buffer_download(bo, got, sizeof got, 0) == VKGMM_OK);
    for (int i = 0; i < 8; ++i) CHECK(near(got[i], 2 * want[i]));
    ops.d_logits = ops.logits; /* the output over an input: refused, naming both */
    CHECK(vkgmm_top_k_backward_plan_run(ctx, plan, &ops) == VKGMM_INVALID_ARGUMENT &&
          strstr(message(), "top_k_backward: d_logits overlaps logits"));
    add.reserved = 1;
    vkgmm_top_k_backward_plan* refused = (vkgmm_top_k_backward_plan*)&refused;
    CHECK(vkgmm_top_k_backward_plan_create(ctx, &fwd, &add, &refused) == VKGMM_INVALID_ARGUMENT && refused == NULL &&
          strstr(message(), "reserved"));
    fwd.top_k = 5; /* more than the experts */
    CHECK(vkgmm_top_k_backward_plan_create(ctx, &fwd, NULL, &refused) == VKGMM_INVALID_ARGUMENT && refused == NULL &&
          strstr(message(), "top_k_backward: top_k"));
    vkgmm_top_k_backward_plan_destroy(plan);
    vkgmm_top_k_backward_plan_destroy(accumulating);
    vkgmm_buffer_destroy(bl);
    vkgmm_buffer_destroy(bi);
    vkgmm_buffer_destroy(bw);
    vkgmm_buffer_destroy(bd);
    vkgmm_buffer_destroy(bo);
  }
}

/* ----- 16-bit operands of odd element counts, in buffers of exactly their bytes ---------------------- */

/* bf16 bits of a float that bf16 holds exactly (the values below are multiples of 1/8 in [-1, 1]). */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* A buffer of exactly count bf16 elements (count odd: the data ends mid-word; vkgmm pads its own). */
static vkgmm_buffer* make_bf16(vkgmm_context* ctx, const float* values, int count) {
  uint16_t bits[128];
  for (int i = 0; i < count; ++i) bits[i] = values ? to_bf16(values[i]) : 0;
  vkgmm_buffer* b = NULL;
  CHECK(vkgmm_buffer_create(ctx, (size_t)count * 2, &b) == VKGMM_OK);
  if (b) CHECK(vkgmm_buffer_upload(b, bits, (size_t)count * 2, 0) == VKGMM_OK);
  return b;
}

static int near16(float got, double want) { return fabs(got - want) <= 1e-3 + 1e-2 * fabs(want); }

/* gmm and tgmm with every operand bf16 and odd: m = 3, k = 7, n = 5, three groups of one row. */
static void test_odd_counts(vkgmm_context* ctx) {
  enum { OM = 3, OK_ = 7, ON = 5, OG = 3 };
  static const int32_t ones[OG] = {1, 1, 1};
  float a[OM * OK_], b[OG * OK_ * ON], ex[OG * OK_ * ON];
  uint16_t got[OG * OK_ * ON];
  fill(a, OM * OK_, 3);
  fill(b, OG * OK_ * ON, 4);
  fill(ex, OG * OK_ * ON, 5);

  /* gmm: lhs [3, 7] (21), rhs [3, 7, 5] (105), out and existing_out [3, 5] (15). */
  vkgmm_gmm_problem p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.m = OM, p.k = OK_, p.n = ON, p.group_sizes = ones, p.num_groups = OG;
  p.lhs_type = p.rhs_type = p.out_type = VKGMM_BF16;
  p.existing_out = 1;
  vkgmm_gmm_plan* plan = NULL;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_OK);
  if (plan) {
    vkgmm_operand_sizes s = {sizeof s};
    CHECK(vkgmm_gmm_plan_sizes(plan, &s) == VKGMM_OK);
    CHECK(s.lhs == 42 && s.rhs == 210 && s.out == 30 && s.existing_out == 30);
    vkgmm_buffer *bl = make_bf16(ctx, a, OM * OK_), *br = make_bf16(ctx, b, OG * OK_ * ON),
                 *bo = make_bf16(ctx, NULL, OM * ON), *be = make_bf16(ctx, ex, OM * ON);
    vkgmm_gmm_operands ops = {sizeof ops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(br), vkgmm_buffer_whole(bo),
                              vkgmm_buffer_whole(be)};
    CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_OK);
    CHECK(vkgmm_buffer_download(bo, got, OM * ON * 2, 0) == VKGMM_OK);
    int bad = 0;
    for (int r = 0; r < OM; ++r)
      for (int j = 0; j < ON; ++j) {
        double want = 0; /* every row is in an active group: existing_out fills only the others */
        for (int kk = 0; kk < OK_; ++kk) want += (double)a[r * OK_ + kk] * b[(r * OK_ + kk) * ON + j];
        bad += !near16(from_bf16(got[r * ON + j]), want);
      }
    CHECK(bad == 0);
    vkgmm_gmm_plan_destroy(plan);
    vkgmm_buffer_destroy(bl);
    vkgmm_buffer_destroy(br);
    vkgmm_buffer_destroy(bo);
    vkgmm_buffer_destroy(be);
  }

  /* tgmm: lhs [7, 3] (21), rhs [3, 5] (15), out and existing_out [3, 7, 5] (105). */
  vkgmm_tgmm_problem q;
  memset(&q, 0, sizeof q);
  q.struct_size = sizeof q;
  q.m = OM, q.k = OK_, q.n = ON, q.group_sizes = ones, q.num_groups = OG;
  q.lhs_type = q.rhs_type = q.out_type = VKGMM_BF16;
  q.existing_out = 1;
  vkgmm_tgmm_plan* tplan = NULL;
  CHECK(vkgmm_tgmm_plan_create(ctx, &q, &tplan) == VKGMM_OK);
  if (tplan) {
    vkgmm_operand_sizes s = {sizeof s};
    CHECK(vkgmm_tgmm_plan_sizes(tplan, &s) == VKGMM_OK);
    CHECK(s.lhs == 42 && s.rhs == 30 && s.out == 210 && s.existing_out == 210);
    vkgmm_buffer *bl = make_bf16(ctx, a, OK_ * OM), *br = make_bf16(ctx, b, OM * ON),
                 *bo = make_bf16(ctx, NULL, OG * OK_ * ON), *be = make_bf16(ctx, ex, OG * OK_ * ON);
    vkgmm_tgmm_operands ops = {sizeof ops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(br), vkgmm_buffer_whole(bo),
                               vkgmm_buffer_whole(be)};
    CHECK(vkgmm_tgmm_plan_run(ctx, tplan, &ops) == VKGMM_OK);
    CHECK(vkgmm_buffer_download(bo, got, OG * OK_ * ON * 2, 0) == VKGMM_OK);
    int bad = 0;
    for (int g = 0; g < OG; ++g) /* group g holds row g alone */
      for (int kk = 0; kk < OK_; ++kk)
        for (int j = 0; j < ON; ++j) {
          const int i = (g * OK_ + kk) * ON + j;
          bad += !near16(from_bf16(got[i]), ex[i] + (double)a[kk * OM + g] * b[g * ON + j]);
        }
    CHECK(bad == 0);
    vkgmm_tgmm_plan_destroy(tplan);
    vkgmm_buffer_destroy(bl);
    vkgmm_buffer_destroy(br);
    vkgmm_buffer_destroy(bo);
    vkgmm_buffer_destroy(be);
  }
}

/* ----- the MoE layer: one expert, top-1, no activation, so y = x @ w_up @ w_down and the router's weight
 * is 1 with zero gradient -------------------------------------------------------------------------- */
static void test_moe_layer(vkgmm_context* ctx) {
  enum { T = 3, D = 4, F = 2 };
  vkgmm_moe_layer_problem p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.tokens = T, p.d_model = D, p.d_ff = F, p.num_experts = 1, p.top_k = 1, p.local_experts = -1;
  p.renormalize = 1, p.activation = VKGMM_ACTIVATION_NONE, p.dtype = VKGMM_F32, p.weight_type = VKGMM_F32;
  vkgmm_moe_layer_plan* plan = NULL;
  p.reserved_tail = 1;
  CHECK(vkgmm_moe_layer_plan_create(ctx, &p, &plan) == VKGMM_INVALID_ARGUMENT && !plan);
  p.reserved_tail = 0;
  CHECK(vkgmm_moe_layer_plan_create(ctx, &p, &plan) == VKGMM_OK);
  vkgmm_moe_layer_sizes s = {sizeof s};
  CHECK(vkgmm_moe_layer_plan_sizes(plan, &s) == VKGMM_OK && s.x == T * D * 4 && s.w_up == D * F * 4 &&
        s.w_down == F * D * 4 && s.router_w == D * 4 && s.workspace > 0);
  {
    /* w_down in its own type: q8_0 at d_ff 32 is [1, D, 32] in one block per row; an unknown type is refused
     * by name; a caller of the vkgmm.h before the field takes weight_type for both. */
    vkgmm_moe_layer_problem q = p;
    vkgmm_moe_layer_plan* qp = NULL;
    vkgmm_moe_layer_sizes qs = {sizeof qs};
    q.d_ff = 32, q.has_down_weight_type = 1, q.down_weight_type = VKGMM_Q8_0;
    CHECK(vkgmm_moe_layer_plan_create(ctx, &q, &qp) == VKGMM_OK);
    CHECK(vkgmm_moe_layer_plan_sizes(qp, &qs) == VKGMM_OK && qs.w_down == D * 34 && qs.w_up == D * 32 * 4);
    vkgmm_moe_layer_plan_destroy(qp);
    q.down_weight_type = (vkgmm_dtype)99;
    CHECK(vkgmm_moe_layer_plan_create(ctx, &q, &qp) == VKGMM_INVALID_ARGUMENT && !qp);
    CHECK(strstr(message(), "down_weight_type") != NULL);
    q.struct_size = offsetof(vkgmm_moe_layer_problem, has_down_weight_type);
    CHECK(vkgmm_moe_layer_plan_create(ctx, &q, &qp) == VKGMM_OK);
    CHECK(vkgmm_moe_layer_plan_sizes(qp, &qs) == VKGMM_OK && qs.w_down == 32 * D * 4);
    vkgmm_moe_layer_plan_destroy(qp);
  }
  float x[T * D], rw[D], wu[D * F], wd[F * D], dy[T * D], y[T * D], dx[T * D], drw[D], dwu[D * F], dwd[F * D];
  fill(x, T * D, 11);
  fill(rw, D, 12);
  fill(wu, D * F, 13);
  fill(wd, F * D, 14);
  fill(dy, T * D, 15);
  vkgmm_buffer *bx = make_buffer(ctx, x, T * D), *brw = make_buffer(ctx, rw, D), *bwu = make_buffer(ctx, wu, D * F),
               *bwd = make_buffer(ctx, wd, F * D), *bdy = make_buffer(ctx, dy, T * D), *by = make_buffer(ctx, NULL, T * D),
               *bdx = make_buffer(ctx, NULL, T * D), *bdrw = make_buffer(ctx, NULL, D), *bdwu = make_buffer(ctx, NULL, D * F),
               *bdwd = make_buffer(ctx, NULL, F * D);
  vkgmm_moe_layer_operands ops;
  memset(&ops, 0, sizeof ops);
  ops.struct_size = sizeof ops;
  ops.x = vkgmm_buffer_whole(bx), ops.router_w = vkgmm_buffer_whole(brw), ops.w_up = vkgmm_buffer_whole(bwu);
  ops.w_down = vkgmm_buffer_whole(bwd), ops.y = vkgmm_buffer_whole(by);
  vkgmm_moe_layer_gradients g;
  memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.d_y = vkgmm_buffer_whole(bdy), g.d_x = vkgmm_buffer_whole(bdx), g.d_router_w = vkgmm_buffer_whole(bdrw);
  g.d_w_up = vkgmm_buffer_whole(bdwu), g.d_w_down = vkgmm_buffer_whole(bdwd);
  CHECK(vkgmm_moe_layer_plan_run(ctx, plan, &ops, &g) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(by, y, sizeof y, 0) == VKGMM_OK && vkgmm_buffer_download(bdx, dx, sizeof dx, 0) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdrw, drw, sizeof drw, 0) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdwu, dwu, sizeof dwu, 0) == VKGMM_OK);
  CHECK(vkgmm_buffer_download(bdwd, dwd, sizeof dwd, 0) == VKGMM_OK);
  int bad = 0;
  double h[T][F], dh[T][F];
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < F; ++c) {
      h[t][c] = dh[t][c] = 0;
      for (int i = 0; i < D; ++i) h[t][c] += (double)x[t * D + i] * wu[i * F + c];
      for (int j = 0; j < D; ++j) dh[t][c] += (double)dy[t * D + j] * wd[c * D + j];
    }
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < D; ++j) {
      double want = 0, want_dx = 0;
      for (int c = 0; c < F; ++c) want += h[t][c] * wd[c * D + j], want_dx += dh[t][c] * wu[j * F + c];
      bad += !near(y[t * D + j], want) + !near(dx[t * D + j], want_dx);
    }
  for (int i = 0; i < D; ++i) {
    bad += !near(drw[i], 0.0);
    for (int c = 0; c < F; ++c) {
      double want = 0;
      for (int t = 0; t < T; ++t) want += (double)x[t * D + i] * dh[t][c];
      bad += !near(dwu[i * F + c], want);
    }
  }
  for (int c = 0; c < F; ++c)
    for (int j = 0; j < D; ++j) {
      double want = 0;
      for (int t = 0; t < T; ++t) want += h[t][c] * dy[t * D + j];
      bad += !near(dwd[c * D + j], want);
    }
  CHECK(bad == 0);
  {
    /* forward_only: a smaller workspace, the same y to the bit; the backward refused by name. */
    vkgmm_moe_layer_problem q = p;
    vkgmm_moe_layer_plan* fp = NULL;
    vkgmm_moe_layer_sizes fs = {sizeof fs};
    float y2[T * D];
    q.forward_only = 1;
    CHECK(vkgmm_moe_layer_plan_create(ctx, &q, &fp) == VKGMM_OK);
    CHECK(vkgmm_moe_layer_plan_sizes(fp, &fs) == VKGMM_OK && fs.workspace < s.workspace && fs.y == s.y);
    CHECK(vkgmm_moe_layer_plan_run(ctx, fp, &ops, &g) == VKGMM_INVALID_ARGUMENT && strstr(message(), "forward_only"));
    CHECK(vkgmm_moe_layer_plan_run(ctx, fp, &ops, NULL) == VKGMM_OK);
    CHECK(vkgmm_buffer_download(by, y2, sizeof y2, 0) == VKGMM_OK && memcmp(y, y2, sizeof y) == 0);
    vkgmm_moe_layer_plan_destroy(fp);
  }
  vkgmm_moe_layer_plan_destroy(plan);
  vkgmm_buffer* all[] = {bx, brw, bwu, bwd, bdy, by, bdx, bdrw, bdwu, bdwd};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) vkgmm_buffer_destroy(all[i]);
}

/* ----- the messages a C caller gets: its own names ------------------------------------------------------ */

static vkgmm_status fail_inside(VkCommandBuffer cmd, void* user) {
  (void)cmd;
  vkgmm_buffer* none = NULL;
  vkgmm_buffer_create((vkgmm_context*)user, 0, &none); /* fails, and sets this thread's message */
  return VKGMM_OK;
}

static void test_c_names(vkgmm_context* ctx) {
  vkgmm_context_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_s = -1;
  vkgmm_context* unmade = NULL;
  CHECK(vkgmm_context_create(&o, &unmade) == VKGMM_INVALID_ARGUMENT && unmade == NULL);
  CHECK(strstr(message(), "vkgmm_context_options.timeout_s") != NULL);
  CHECK(vkgmm_buffer_create(ctx, 0, &(vkgmm_buffer*){NULL}) == VKGMM_INVALID_ARGUMENT);
  CHECK(strstr(message(), "vkgmm_buffer_create") != NULL);

  vkgmm_gmm_problem p = gmm_problem();
  p.num_rhs_groups = G + 1; /* past the groups */
  expect_refused(ctx, &p, "num_rhs_groups");
  p = gmm_problem();
  p.top_k = 2, p.num_rhs_groups = -2, p.num_experts = G, p.group_sizes = NULL, p.num_groups = 0;
  expect_refused(ctx, &p, ">= -1");

  /* Run-time views: a combining plan given no weights, ids too few for its slots, a bias it has none of. */
  vkgmm_buffer *bl = make_buffer(ctx, lhs, M * K), *br = make_buffer(ctx, rhs, G * K * N),
               *bo = make_buffer(ctx, NULL, M * N), *bw = make_buffer(ctx, NULL, 2 * M);
  p.num_rhs_groups = G, p.combine = 1;
  vkgmm_gmm_plan* plan = NULL;
  CHECK(vkgmm_gmm_plan_create(ctx, &p, &plan) == VKGMM_OK);
  vkgmm_operand_sizes need = {sizeof need};
  if (plan) CHECK(vkgmm_gmm_plan_sizes(plan, &need) == VKGMM_OK);
  vkgmm_buffer* bws = make_buffer(ctx, NULL, need.workspace / 4 + 1);
  vkgmm_gmm_operands ops = {sizeof ops, vkgmm_buffer_whole(bl), vkgmm_buffer_whole(br), vkgmm_buffer_whole(bo), {0}};
  ops.ids = vkgmm_buffer_whole(bw);
  ops.workspace = vkgmm_buffer_whole(bws);
  if (plan) {
    CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_INVALID_ARGUMENT);
    CHECK(strstr(message(), "weights") != NULL && strstr(message(), "(combine)") != NULL);
    ops.weights = vkgmm_buffer_whole(bw);
    ops.ids.size = 8;
    CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_INVALID_ARGUMENT);
    CHECK(strstr(message(), "ids") != NULL && strstr(message(), "int32 values") != NULL);
    ops.ids = vkgmm_buffer_whole(bw);
    if (need.workspace > 4) { /* none where the kernel reads the ids itself */
      ops.workspace.size = 4;
      CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_INVALID_ARGUMENT);
      CHECK(strstr(message(), "vkgmm_operand_sizes.workspace") != NULL);
    }
    ops.workspace = vkgmm_buffer_whole(bws);
    ops.bias = vkgmm_buffer_whole(bw);
    CHECK(vkgmm_gmm_plan_run(ctx, plan, &ops) == VKGMM_INVALID_ARGUMENT);
    CHECK(strstr(message(), "has no bias (bias)") != NULL);
  }
  vkgmm_gmm_plan_destroy(plan);

  /* A workspace too small names the sizes struct of the op that was given it. */
  vkgmm_gmm_backward_plan* backward = NULL;
  CHECK(vkgmm_gmm_backward_plan_create(ctx, &p, &backward) == VKGMM_OK);
  vkgmm_gmm_backward_sizes bneed = {sizeof bneed};
  if (backward) CHECK(vkgmm_gmm_backward_plan_sizes(backward, &bneed) == VKGMM_OK);
  if (backward && bneed.workspace > 4) {
    /* Every view the routed backward takes, the workspace 4 bytes long. */
    vkgmm_buffer *dl = make_buffer(ctx, NULL, M * K), *dr = make_buffer(ctx, NULL, G * K * N),
                 *dw = make_buffer(ctx, NULL, 2 * M), *wt = make_buffer(ctx, NULL, 2 * M);
    vkgmm_gmm_backward_operands bops;
    memset(&bops, 0, sizeof bops);
    bops.struct_size = sizeof bops;
    bops.lhs = vkgmm_buffer_whole(bl), bops.rhs = vkgmm_buffer_whole(br), bops.d_out = vkgmm_buffer_whole(bo);
    bops.d_lhs = vkgmm_buffer_whole(dl), bops.d_rhs = vkgmm_buffer_whole(dr), bops.d_weights = vkgmm_buffer_whole(dw);
    bops.ids = vkgmm_buffer_whole(bw), bops.weights = vkgmm_buffer_whole(wt);
    bops.workspace = vkgmm_buffer_whole(bws);
    bops.workspace.size = 4;
    CHECK(vkgmm_gmm_backward_plan_run(ctx, backward, &bops) == VKGMM_INVALID_ARGUMENT);
    CHECK(strstr(message(), "vkgmm_gmm_backward_sizes.workspace") != NULL);
    vkgmm_buffer_destroy(dl);
    vkgmm_buffer_destroy(dr);
    vkgmm_buffer_destroy(dw);
    vkgmm_buffer_destroy(wt);
  }
  vkgmm_gmm_backward_plan_destroy(backward);
  vkgmm_moe_layer_problem mp;
  memset(&mp, 0, sizeof mp);
  mp.struct_size = sizeof mp;
  mp.tokens = 4, mp.d_model = 8, mp.d_ff = 6, mp.num_experts = 3, mp.top_k = 2, mp.local_experts = -1;
  vkgmm_moe_layer_plan* layer = NULL;
  CHECK(vkgmm_moe_layer_plan_create(ctx, &mp, &layer) == VKGMM_OK);
  if (layer) {
    vkgmm_moe_layer_operands mops;
    memset(&mops, 0, sizeof mops);
    mops.struct_size = sizeof mops;
    mops.workspace = vkgmm_buffer_whole(bws);
    mops.workspace.size = 4;
    CHECK(vkgmm_moe_layer_plan_run(ctx, layer, &mops, NULL) == VKGMM_INVALID_ARGUMENT);
    CHECK(strstr(message(), "moe_layer: workspace") != NULL &&
          strstr(message(), "vkgmm_moe_layer_sizes.workspace") != NULL);
  }
  vkgmm_moe_layer_plan_destroy(layer);

  /* A call that succeeds clears the message, though a call nested in it (in its callback) failed. */
  CHECK(vkgmm_submit_and_wait(ctx, fail_inside, ctx) == VKGMM_OK);
  CHECK(strcmp(vkgmm_last_error_message(), "") == 0);

  vkgmm_buffer_destroy(bl);
  vkgmm_buffer_destroy(br);
  vkgmm_buffer_destroy(bo);
  vkgmm_buffer_destroy(bw);
  vkgmm_buffer_destroy(bws);
}

int main(void) {
  CHECK(strcmp(vkgmm_status_string(VKGMM_INVALID_ARGUMENT), "VKGMM_INVALID_ARGUMENT") == 0);
  CHECK(strcmp(vkgmm_status_string((vkgmm_status)99), "VKGMM_UNKNOWN_STATUS") == 0);
  CHECK(strcmp(vkgmm_version_string(), VKGMM_PROJECT_VERSION) == 0); /* CMake's project(VERSION) */
  fill(lhs, M * K, 1);
  fill(rhs, G * K * N, 2);

  vkgmm_context_options o = {sizeof o, NULL, 1}; /* validation on */
  vkgmm_context* ctx = NULL;
  if (vkgmm_context_create(&o, &ctx) != VKGMM_OK) {
    fprintf(stderr, "vkgmm_context_create: %s\n", vkgmm_last_error_message());
    return 1;
  }
  printf("vkgmm %s on %s\n", vkgmm_version_string(), vkgmm_context_device_name(ctx));
  /* Inputs read whole: at least one binding's worth; nothing for a NULL context or an unknown type. */
  CHECK(vkgmm_context_max_whole_input_bytes(ctx, VKGMM_F32) >= 65536);
  CHECK(vkgmm_context_max_whole_input_bytes(ctx, VKGMM_Q4_K) >= 65536);
  CHECK(vkgmm_context_max_whole_input_bytes(NULL, VKGMM_F32) == 0);
  CHECK(vkgmm_context_max_whole_input_bytes(ctx, (vkgmm_dtype)99) == 0);
  /* The device as vkgmm sees it: where an app's workspace may start, among others. */
  vkgmm_device_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK(vkgmm_context_info(ctx, &info) == VKGMM_OK && strcmp(info.name, vkgmm_context_device_name(ctx)) == 0 &&
        info.min_storage_buffer_offset_alignment > 0 && info.subgroup_size > 0 && info.matrix_extension != NULL);
  info.struct_size = 0;
  CHECK(vkgmm_context_info(ctx, &info) == VKGMM_INVALID_ARGUMENT);
  test_gmm(ctx);
  test_tgmm_and_backward(ctx);
  test_odd_counts(ctx);
  test_device_sizes(ctx);
  test_errors(ctx);
  test_struct_sizes(ctx);
  test_routing_fields(ctx);
  test_saved_pre_activation(ctx);
  test_top_k(ctx);
  test_top_k_backward(ctx);
  test_moe_layer(ctx);
  test_c_names(ctx);
  vkgmm_context_destroy(ctx);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  else printf("all C API checks passed\n");
  return failures ? 1 : 0;
}
