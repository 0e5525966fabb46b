#!/usr/bin/env bash
# quickstart.sh: on a fresh Debian 12 machine, installs what is missing, builds, and runs the
# main job: the SICK BIDE paper experiment (configs/bide_fit.yaml); outputs in runs/bide_fit/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target bitgrad
./build/bitgrad fit-bide configs/bide_fit.yaml "$@"
