// harness.h: the op test harness (after ggml's test-backend-ops). One OpCase per op describes
// its inputs and how to call it; check_cpu_case() compares CPU f32 with CPU f64 (and with an
// optional independent f64 reference) and the f64 backward with central finite differences;
// check_cuda_case() compares CUDA f32/f16/bf16 forward and backward with the CPU. Inputs are
// fresh random numbers each run (seed printed on failure; BITGRAD_TEST_SEED pins it).
#pragma once
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"

namespace bg::test {

enum class Kind { normal, positive, index, mask, target };

struct InputSpec {
  Shape shape;
  Kind kind = Kind::normal;
  int64_t range = 0;  // index/target: values in [0, range); target: ~10% set to -100
  bool differentiable = true;
};

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct OpCase {
  std::string name;
  std::vector<InputSpec> inputs;
  OpFn fn;
  OpFn reference;              // optional independent f64 reference
  bool noncontiguous = false;  // feed float inputs as strided views
  double f32_tol = 2e-6;       // relative L2 error of CPU f32 vs f64
  double fd_tol = 1e-6;        // finite-difference tolerance (relative to the grad's scale)
  double cuda_f32_tol = 1e-5;  // CUDA f32 vs CPU f32, forward and gradients
  bool half_on_cuda = true;    // also run f16/bf16 on CUDA
  // Compare f16/bf16 gradients with f32 ones too. Off for ops whose gradient jumps (ties in
  // max/maximum/minimum, relu kinks of a sum as in BIDE): rounding inputs to half precision can
  // land on the other side of the jump.
  // CUDA half is always checked against CPU half on the same rounded inputs.
  bool half_grads_vs_f32 = true;
  bool differentiable = true;
  // The op is piecewise smooth (relu kinks inside, as BIDE's logits): an element whose
  // finite-difference interval holds a kink (its two one-sided differences disagree) is checked
  // against the one-sided difference of its own side, which the backward's slope must match.
  bool kinks = false;
};

uint64_t test_seed();
double rel_err(const Tensor& got, const Tensor& want);
// How many elements of a and b differ in their bits (compared as f64, which every float dtype
// widens to exactly); -1 when their sizes differ.
int64_t bit_mismatches(const Tensor& a, const Tensor& b);
std::vector<Tensor> make_inputs(const OpCase& c, Generator& gen, DType dtype);
Tensor noncontiguous_copy(const Tensor& t);
void check_cpu_case(const OpCase& c);
void check_cuda_case(const OpCase& c);

// A compute mode of the given precision (standard algorithm).
inline ComputeMode precision_mode(MatmulPrecision p) {
  ComputeMode m;
  m.precision = p;
  return m;
}
// The mode the fused attention kernel honours on `device`: bf16 products on CUDA, fp32 on the
// CPU.
inline ComputeMode fused_attention_mode(Device device) {
  return precision_mode(MatmulPrecision::bf16).on(device);
}

// CUDA test cases start with this: without a GPU the case is reported as skipped (the test
// binary exits 77 when every case it ran was skipped, which CTest shows as "Skipped").
bool cuda_skip();
// Counts the running case as skipped, saying why (a GPU feature the driver lacks).
void skip_case(const std::string& why);
// A path for a test's scratch file or folder NAME, in this process's own folder under the
// system's temporary directory: made on first use, removed with all it holds when the process
// exits. Two test processes (ctest -j) never share a file, and nothing is left behind.
std::string scratch_path(const std::string& name);
// The path of ../shared/data/NAME (or $BITGRAD_DATA_DIR/NAME); empty, and the case counted as
// skipped, when the file is absent.
std::string shared_data_file(const std::string& name);
#define BG_REQUIRE_CUDA() \
  if (::bg::test::cuda_skip()) return

// Registers "cpu: NAME" and "cuda: NAME" for a case builder.
#define BG_OP_TEST(NAME, BUILDER)                                    \
  TEST_CASE("cpu: " NAME) { ::bg::test::check_cpu_case(BUILDER()); } \
  TEST_CASE("cuda: " NAME) {                                         \
    BG_REQUIRE_CUDA();                                               \
    ::bg::test::check_cuda_case(BUILDER());                          \
  }

// Pins the tensor-core kernel family (cuda::KernelFamily) for one scope.
struct PinKernelFamily {
  explicit PinKernelFamily(cuda::KernelFamily family) { cuda::set_kernel_family(family); }
  ~PinKernelFamily() { cuda::set_kernel_family(cuda::KernelFamily::best); }
};

// Hopper-kernel cases start with this: on another GPU (or a build without sm_90a code) the case
// is reported as skipped.
#define BG_REQUIRE_HOPPER_KERNELS()            \
  BG_REQUIRE_CUDA();                           \
  if (!::bg::cuda::hopper_kernels_available()) \
  return ::bg::test::skip_case(                \
      "the Hopper kernels need a compute capability 9.0 GPU and sm_90a code")

}  // namespace bg::test
