// dispatch.h: the one place where an op picks its backend, plus helpers every op shares
// (compute dtypes, scratch memory). Included by core/ops/*.cpp only.
#pragma once
#include <vector>

#include "../kernels/cpu/cpu_kernels.h"
#include "stop.h"
#include "tensor.h"
#if BITGRAD_WITH_CUDA
#include "../kernels/cuda/cuda_kernels.h"
#endif

namespace bg {

[[noreturn]] void fail_no_cuda(const char* kernel);

// A CPU launch first checks for a requested stop (core/stop.h): CPU kernels run where they are
// launched, so a stop between two of them leaves nothing half-done.
#if BITGRAD_WITH_CUDA
#define BG_DISPATCH(device, kernel, ...)                 \
  ((device).is_cuda() ? ::bg::cuda::kernel(__VA_ARGS__) \
                      : (::bg::check_stop(), ::bg::cpu::kernel(__VA_ARGS__)))
#else
#define BG_DISPATCH(device, kernel, ...)             \
  ((device).is_cuda() ? ::bg::fail_no_cuda(#kernel) \
                      : (::bg::check_stop(), ::bg::cpu::kernel(__VA_ARGS__)))
#endif

// The dtype kernels compute in on this device: CPU kernels take f32/f64, so f16/bf16 CPU
// tensors are widened to f32; CUDA kernels take f32/f16/bf16 natively.
DType compute_dtype(const Tensor& t);
// Contiguous tensor in compute_dtype (no copy when it already is one).
Tensor compute_input(const Tensor& t);
// Rounds a compute-dtype result back to `dtype` (no-op when equal).
Tensor compute_output(const Tensor& t, DType dtype);
// The gradient an op's backward kernels read, for an input computed in `input_dtype`: g
// contiguous in that dtype, except a bf16 gradient of an f32 input on CUDA (the gradient of an
// output stored in bf16 under bf16 precision), which the kernels read as it is.
Tensor incoming_gradient(const Tensor& g, DType input_dtype);
// Statistics dtype for kernels that store per-row stats (lse, mean, rstd): f64 for f64.
DType stats_dtype(DType compute);

// Checks a op's floating input: defined, float dtype.
void check_float(const Tensor& t, const char* op, const char* what);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
int normalize_dim(int dim, int ndim, const char* op);

// Scratch memory for kernel launchers: tensors kept alive until the arena dies.
class ScratchArena : public Scratch {
 public:
  explicit ScratchArena(Device device) : device_(device) {}
  void* get(size_t bytes) override;

 private:
  Device device_;
  std::vector<Tensor> blocks_;
};

KView null_view();                    // a view with data == nullptr, for optional kernel arguments
KView view_or_null(const Tensor& t);  // t's view, or null_view() for an undefined tensor

}  // namespace bg
