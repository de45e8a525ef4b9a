// How a group size from the app's device buffer is taken, one definition for the metadata build
// (metadata.comp) and for the gmm kernel that reads the sizes itself (gmm.comp, SIZES_IN_KERNEL), so that
// both give every group the same rows and flag the same sizes. `m` is the problem's rows.

// Size s as taken: negative -> 0, more than m -> m (both flagged in bad).
uint group_size_taken(int s, uint m, inout uint bad) {
  if (s < 0) bad |= VKGMM_STATUS_NEGATIVE_SIZE;
  if (s > 0 && uint(s) > m) bad |= VKGMM_STATUS_SUM_ABOVE_M;  // one size past m: the sum is too
  return s < 0 ? 0u : min(uint(s), m);
}

// a + b clamped at m (a, b <= m < 2^31, so a + b does not wrap): a prefix sum of taken sizes, which
// then never leaves [0, m] (the same sum in any grouping of its terms).
uint group_sizes_add(uint a, uint b, uint m, inout uint bad) {
  uint t = a + b;
  if (t > m) bad |= VKGMM_STATUS_SUM_ABOVE_M;
  return min(t, m);
}
