#!/usr/bin/env bash
# Install what vkgmm needs to build, test and benchmark on Debian 12 (apt-get; run as root or with sudo).
# Installs only what is missing, so it is quick on a machine that has everything.
set -euo pipefail

packages=(cmake g++ make libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers
          libgtest-dev googletest python3-numpy libopenblas-dev pkg-config
          libopenmpi-dev openmpi-bin   # MPI: examples/expert_parallel and its tests
          pybind11-dev python3-dev python3-pytest  # the Python package (python/) and its tests
          python3-venv python3-pip python3-setuptools python3-wheel  # pip install . (scripts/check_pip_install.sh)
          python3-matplotlib  # scripts/roofline.py: the bench's roofline (ctest bench_roofline)
          libglvnd0 libglx0 libopengl0 libegl1 libxext6)  # scripts/bundle.sh carries these: the GL
                                                          # dispatch and X libraries NVIDIA's Vulkan driver loads
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "vkgmm: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian trixie's glslc (the KHR cooperative-matrix builds: Debian 12's cannot emit them) and NVIDIA's,
# Intel's and RDNA3's compilers (the gpu-report tests), unpacked into build/gpu-compilers, nothing into
# the system; instant when present. Without them the build has no KHR matrix builds and those tests fail.
"$(dirname "$0")/gpu_compilers.sh" fetch >&2 ||
  echo "vkgmm: warning: scripts/gpu_compilers.sh fetch failed: building without the KHR matrix builds" >&2
