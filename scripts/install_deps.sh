#!/usr/bin/env bash
# install_deps.sh: installs bitgrad's build dependencies from Debian 12 packages (skips what is
# already there). The CUDA toolkit is not installed here: with nvcc on PATH the CUDA kernels
# are built too, without it the CPU-only build is.
set -euo pipefail
pkgs="cmake g++ pkg-config libeigen3-dev libhdf5-dev libyaml-cpp-dev doctest-dev hdf5-tools"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq $missing >/dev/null
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "note: nvcc found at /usr/local/cuda/bin; add it to PATH to build the CUDA kernels" >&2
fi
