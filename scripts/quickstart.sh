#!/usr/bin/env bash
# quickstart.sh: on a fresh Debian 12 machine, installs what is missing, builds, and runs the
# main job (configs/char_mlp.yaml until the BIDE fit lands).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target bitgrad
./build/bitgrad train configs/char_mlp.yaml "$@"
