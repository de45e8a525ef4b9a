// tgmm's split reduction built on the device (metadata.comp with TGMM_SPLIT; interface.h,
// VKGMM_ID_META_TGMM_SPLIT): host/tgmm_items.cpp's rule taken on the group offsets the build has just
// written, so that a call gives the bits its host-sized twin gives. Every value is at most m (< 2^31) or
// a few steps past it, so no sum here wraps; every loop is bounded by the active groups, the chunks per
// group (at most split_slots) or max_visits. The includer declares work (coherent), part[], total_tiles,
// scan_parts and pc.

shared uint split_total, split_busy, split_longest, split_groups;

uint split_rows(uint j) { return uint(work[pc.group_offset + j + 1u]) - uint(work[pc.group_offset + j]); }
uint split_round_up(uint x, uint to) { return (x + to - 1u) / to * to; }

// The rows each of the device's concurrent workgroups walks when every block's rows are shared evenly:
// ceil(total * blocks / concurrent), or m where that is more (no chunk that long splits anything).
// blocks * concurrent < 2^32 (the host's condition for this build).
uint split_even_share(uint total) {
  const uint q = total / pc.split_concurrent, r = total % pc.split_concurrent;
  if (q > pc.m / pc.split_blocks) return pc.m;
  return min(q * pc.split_blocks + (r * pc.split_blocks + pc.split_concurrent - 1u) / pc.split_concurrent, pc.m);
}

// Writes one work item at list place `at` (below max_visits).
void split_item(uint at, int group, uint begin, uint end, int slot) {
  const uint w = pc.visits_off + at * VKGMM_TGMM_ITEM_WORDS;
  work[w + VKGMM_TGMM_ITEM_GROUP] = group;
  work[w + VKGMM_TGMM_ITEM_BEGIN] = int(begin);
  work[w + VKGMM_TGMM_ITEM_END] = int(end);
  work[w + VKGMM_TGMM_ITEM_SLOT] = slot;
}

void build_tgmm_items(inout uint bad) {
  const uint lid = local_index(), lanes = gl_WorkGroupSize.x, GL = pc.num_local;
  const uint achunk = (GL + lanes - 1u) / lanes;
  const uint a0 = min(lid * achunk, GL), a1 = min(a0 + achunk, GL);
  if (lid == 0u) {
    split_total = 0u;
    split_busy = 0u;
    split_longest = 0u;
    split_groups = 0u;
  }
  barrier();
  uint total = 0u, busy = 0u, longest = 0u;
  for (uint j = a0; j < a1; ++j) {
    const uint r = split_rows(j);
    total += r;
    busy += r > 0u ? 1u : 0u;
    longest = max(longest, r);
  }
  atomicAdd(split_total, total);
  atomicAdd(split_busy, busy);
  atomicMax(split_longest, longest);
  barrier();
  // The chunk: the busy groups' mean rows, 4 steps or the even share, whichever is largest, rounded up
  // to a step. Skewed: the longest group walks more than two chunks.
  const uint T = split_total, B = split_busy, L = split_longest, step = pc.split_step;
  const uint chunk = B == 0u ? 0u : split_round_up(max(max((T + B - 1u) / B, 4u * step), split_even_share(T)), step);
  const bool skewed = B > 0u && L > chunk && L - chunk > chunk;
  // Every group longer than a chunk is then split, each into the same number of chunks: enough to bring
  // the longest down to about a chunk, as many as the slots allow; fewer than 2 splits none.
  uint mine = 0u;
  if (skewed)
    for (uint j = a0; j < a1; ++j) mine += split_rows(j) > chunk ? 1u : 0u;
  atomicAdd(split_groups, mine);
  barrier();
  const uint S = split_groups;
  uint chunks = skewed && S > 0u ? min((L - 1u) / chunk + 1u, pc.split_slots / S) : 0u;
  if (chunks < 2u) chunks = 0u;

  // Each group's items and whether it is split, scanned over the invocations' chunks of groups.
  uint items = 0u, splits = 0u;
  for (uint j = a0; j < a1; ++j) {
    const bool split = chunks > 0u && split_rows(j) > chunk;
    items += split ? chunks : 1u;
    splits += split ? 1u : 0u;
  }
  part[lid] = items;
  scan_parts(false, bad);
  uint at = part[lid];
  // At most max_visits items (the host's bound: every group's item, and each split's chunks less one).
  if (total_tiles > pc.max_visits) bad |= VKGMM_STATUS_VISITS_CUT;
  const uint R = min(total_tiles, pc.max_visits);
  part[lid] = splits;
  scan_parts(false, bad);
  uint split_at = part[lid];
  for (uint j = a0; j < a1; ++j) {
    const uint begin = uint(work[pc.group_offset + j]), end = begin + split_rows(j);
    if (chunks == 0u || end - begin <= chunk) {
      if (at < R) split_item(at, int(j), begin, end, -1);
      ++at;
      continue;
    }
    work[pc.split_off + VKGMM_SPLIT_LIST_HEAD + split_at] = int(j);
    // Chunks of whole steps; the last ones may be empty (their partial sums are zeros).
    const uint length = split_round_up((end - begin + chunks - 1u) / chunks, step);
    for (uint c = 0u; c < chunks; ++c, ++at) {
      const uint from = min(end, begin + c * length), to = min(end, from + length);
      if (at < R) split_item(at, int(j), from, to, int(split_at * chunks + c));
    }
    ++split_at;
  }
  for (uint i = R + lid; i < pc.max_visits; i += lanes) split_item(i, VKGMM_NO_VISIT, 0u, 0u, -1);
  if (lid == 0u) {
    work[pc.split_off] = int(chunks);
    work[pc.split_off + 1u] = int(chunks == 0u ? 0u : S);
  }
}
