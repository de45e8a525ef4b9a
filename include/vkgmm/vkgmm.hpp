// vkgmm: grouped matrix multiplication (gmm, tgmm and the gmm backward) as Vulkan compute.
// What each operation computes, takes and refuses: docs/contract.md.
#pragma once

#include "vkgmm/context.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/moe_layer.hpp"
#include "vkgmm/ops.hpp"
#include "vkgmm/requirements.hpp"
#include "vkgmm/top_k.hpp"
#include "vkgmm/types.hpp"
