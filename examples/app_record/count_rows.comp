#version 450
// The app's own compute pass (a stand-in for an MoE router's last step): count the rows each expert
// received. expert[r] is the expert of row r, rows already sorted by expert; -1 (or anything out of
// range) is a row no expert took. group_sizes must be zero before (the app fills it).
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Experts { int expert[]; };
layout(std430, set = 0, binding = 1) buffer Sizes { int group_sizes[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint groups;
} pc;

void main() {
  const uint r = gl_GlobalInvocationID.x;
  if (r >= pc.rows) return;
  const int e = expert[r];
  if (e >= 0 && uint(e) < pc.groups) atomicAdd(group_sizes[e], 1);
}
