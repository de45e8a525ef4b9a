// Tiling sweep candidates and the per-device cache of the best tilings found.
//
// The cache is a text file, $XDG_CACHE_HOME/vkgmm/tiling-<device>.txt (else ~/.cache/vkgmm/...), one
// line per workload shape: "op=gmm m=4096 k=1024 n=1024 groups=8 dtype=f32 dist=random tiling=64,64,64".
// Only the bench reads it (--tiling auto), and it passes what it finds as an explicit tiling: the
// library's own automatic choice never depends on files.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tiling_text.hpp"
#include "vkgmm/types.hpp"
#include "workloads.hpp"

namespace bench {

// The tilings the sweep tries. Those the device cannot run, and those that resolve to a tiling already
// tried (tiles are clamped to the problem), are skipped by the sweep itself.
std::vector<vkgmm::Tiling> sweep_candidates();

// The cache spells tilings as tool::tiling_text does ("TM,TK,TN").
using tool::parse_tiling;
using tool::tiling_text;

// The cache file for a device name; empty when neither $XDG_CACHE_HOME nor $HOME is set.
std::filesystem::path cache_path(const std::string& device_name);
std::string cache_key(const Workload& w);

std::optional<vkgmm::Tiling> cached_tiling(const std::filesystem::path& file, const Workload& w);
// Adds or replaces the workload's line. Throws std::runtime_error when the file cannot be written.
void store_tiling(const std::filesystem::path& file, const Workload& w, const vkgmm::Tiling& t);

}  // namespace bench
