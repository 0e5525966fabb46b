# device_env.sh: sourced by the scripts that run on the GPU machine. Goes to the repository
# root, unpacks the bundle that travelled with this call (scripts/make_device_bundle.sh),
# points the loader at its libraries and makes the output folder $out ($OUT, or ./gpu_out).
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${OUT:-gpu_out}
mkdir -p "$out"
if [ -f .bundle.tgz ]; then  # always the bundle that travelled with this call
  rm -rf .bundle && mkdir -p .bundle && tar xzf .bundle.tgz -C .bundle
fi
export LD_LIBRARY_PATH=$PWD/.bundle/lib:${LD_LIBRARY_PATH:-}
