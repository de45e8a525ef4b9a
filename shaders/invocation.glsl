// An invocation's number in its workgroup (local_index) and its subgroup's (subgroup_index), as every
// kernel that shares memory between subgroups numbers them. The includer enables
// GL_KHR_shader_subgroup_basic and includes interface.h first.
//
// REVERSE_SUBGROUPS (a test switch, $VKGMM_REVERSE_SUBGROUPS) numbers the subgroups from the last. A CPU
// driver runs a workgroup's subgroups one after another from one barrier to the next (lavapipe), so two
// subgroups that touch the same shared word with no barrier between them always meet in the same order,
// and a race in which the earlier one writes what the later one reads gives the right values there;
// numbered backwards, every such pair meets the other way round, and the race shows in the results. Each
// lane keeps its number within its subgroup, so subgroup operations see the same runs of lanes. The host
// sets it only where the device's subgroups divide the workgroup (PipelineCache::get): whole subgroups,
// so the numbering stays a permutation of the invocations.
layout(constant_id = VKGMM_ID_REVERSE_SUBGROUPS) const bool REVERSE_SUBGROUPS = false;

uint subgroup_index() { return REVERSE_SUBGROUPS ? gl_NumSubgroups - 1u - gl_SubgroupID : gl_SubgroupID; }

uint local_index() {
  return REVERSE_SUBGROUPS ? subgroup_index() * gl_SubgroupSize + gl_SubgroupInvocationID : gl_LocalInvocationIndex;
}
