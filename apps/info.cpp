// info.cpp: `bitgrad info` prints the build and the visible devices.
#include <cstdio>

#include "cli.h"
#include "core/allocator.h"
#include "core/device.h"
#include "core/error.h"
#include "kernels/cuda/device_runtime.h"

namespace bg::cli {

int run_info(const Args& args) {
  args.allow_only({});
  BG_CHECK(args.positional.empty() && args.overrides.empty(), "info", "usage: bitgrad info");
  std::printf("bitgrad: built %s CUDA\n", cuda::built_with_cuda() ? "with" : "without");
  const int n = cuda_device_count();
  std::printf("CUDA devices: %d\n", n);
  for (int i = 0; i < n; ++i)
    std::printf("  cuda:%d  %s\n", i, cuda::describe(cuda::device_info(i)).c_str());
  return 0;
}

}  // namespace bg::cli
