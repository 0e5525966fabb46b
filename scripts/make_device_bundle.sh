#!/usr/bin/env bash
# make_device_bundle.sh: builds bitgrad for sm_90a (H100, H200) and packs the binaries plus the
# non-system shared libraries they need (HDF5, yaml-cpp and their dependencies) into .bundle/, for a GPU
# machine that has the CUDA runtime and cuBLAS but not Debian's -dev libraries, and gzips it to
# .bundle.tgz (what travels to the device: the carry limit is 64 MiB; BUNDLE_XZ=1 packs it with
# xz into .bundle.txz instead, half the size or less, in about a minute). Run there as:
#   mkdir -p .bundle && tar xzf .bundle.tgz -C .bundle
#   LD_LIBRARY_PATH=.bundle/lib .bundle/bitgrad_tests
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a >/dev/null
cmake --build "$build" -j"$(nproc)" --target bitgrad bitgrad_tests
rm -rf .bundle && mkdir -p .bundle/lib
for exe in bitgrad bitgrad_tests; do
  cp "$build/$exe" .bundle/ && strip .bundle/$exe
done
# Everything ldd resolves except the C/C++ runtime and the CUDA libraries the GPU machine has.
skip='linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libcuda|libcublas|libcudart'
ldd .bundle/bitgrad .bundle/bitgrad_tests | awk '/=> \//{print $3}' | sort -u | grep -Ev "$skip" |
  while read -r lib; do cp -L "$lib" .bundle/lib/; done
strip --strip-unneeded .bundle/lib/* 2>/dev/null || true
# BASE_BINARY=FILE: an earlier bitgrad packed beside this one as .bundle/bitgrad_base (the base of
# a before/after comparison: trunk_speed_check.sh BASE=.bundle/bitgrad_base).
[ -n "${BASE_BINARY:-}" ] && cp "$BASE_BINARY" .bundle/bitgrad_base
du -sh .bundle
rm -f .bundle.tgz .bundle.txz
if [ -n "${BUNDLE_XZ:-}" ]; then
  # One 192 MiB window holds several binaries whole: a base binary copied into .bundle/ first
  # (a before/after comparison) costs little more than one.
  tar -C .bundle -cf - . | xz -T1 -9 --lzma2=preset=9,dict=192MiB > .bundle.txz && ls -l .bundle.txz
else
  tar -C .bundle -czf .bundle.tgz . && ls -l .bundle.tgz
fi
