#!/usr/bin/env bash
# test.sh: configures, builds everything (CUDA kernels too when nvcc is available) and runs
# the whole test suite through CTest. CUDA cases report "Skipped" on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
