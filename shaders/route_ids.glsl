// An expert id's place in a routed call, one definition for the routing build (routing.glsl) and for the
// gmm kernel that reads its ids itself (gmm.comp, ROUTE_IN_KERNEL), so that both skip and flag the same
// ids. The includer's push block holds num_experts (0: unknown), window_offset and route_experts.

// Out of range: below -1 (-1 is no expert), or at least num_experts where that is known.
bool route_id_bad(int id) { return id < -1 || (pc.num_experts > 0u && id >= 0 && uint(id) >= pc.num_experts); }

// The id's local expert (id - window_offset), or route_experts for every other id: outside the window,
// -1, or out of range (which sets VKGMM_STATUS_BAD_ID in bad).
uint route_local_expert(int id, inout uint bad) {
  if (route_id_bad(id)) {
    bad |= VKGMM_STATUS_BAD_ID;
    return pc.route_experts;
  }
  if (id < 0 || uint(id) < pc.window_offset) return pc.route_experts;
  const uint e = uint(id) - pc.window_offset;
  return e < pc.route_experts ? e : pc.route_experts;
}
