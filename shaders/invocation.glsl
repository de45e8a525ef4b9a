// An invocation's number in its workgroup (local_index) and its subgroup's (subgroup_index), as every
// kernel that shares memory between subgroups numbers them. The includer enables
// GL_KHR_shader_subgroup_basic, includes interface.h and declares its workgroup size first: glslang folds
// gl_WorkGroupSize where a function reads it, as (1, 1, 1) before the declaration.
//
// REVERSE_SUBGROUPS (a test switch, $VKGMM_REVERSE_SUBGROUPS) numbers the subgroups from the last. A CPU
// driver runs a workgroup's subgroups one after another from one barrier to the next (lavapipe), so two
// subgroups that touch the same shared word with no barrier between them always meet in the same order,
// and a race in which the earlier one writes what the later one reads gives the right values there;
// numbered backwards, every such pair meets the other way round, and the race shows in the results. Each
// lane keeps its number within its subgroup (the last subgroup's lanes become the first ones, in the same
// order), so subgroup operations see the same runs of lanes. Where the subgroups do not divide the
// workgroup the numbering stays as it is.
layout(constant_id = VKGMM_ID_REVERSE_SUBGROUPS) const bool REVERSE_SUBGROUPS = false;

bool subgroups_reversed() {
  const uint invocations = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
  return REVERSE_SUBGROUPS && invocations % gl_SubgroupSize == 0u;
}

uint local_index() {
  if (!subgroups_reversed()) return gl_LocalInvocationIndex;
  const uint invocations = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
  const uint first = gl_LocalInvocationIndex - gl_LocalInvocationIndex % gl_SubgroupSize;
  return invocations - gl_SubgroupSize - first + gl_LocalInvocationIndex % gl_SubgroupSize;
}

uint subgroup_index() { return subgroups_reversed() ? gl_NumSubgroups - 1u - gl_SubgroupID : gl_SubgroupID; }
