// matmul_rows.h: inside core/ops only. The product with autograd that matmul (matmul.cpp) and
// linear (linear.cpp) share, and what it needs said about its rows.
#pragma once
#include <cstdint>

#include "../ops.h"

namespace bg {

// What a product's rows are. matmul keeps the rows of a apart (row i of a @ b depends on row i
// of a alone), and so does the gradient of a; the gradient of b (a^T g) sums over them: its K
// runs over the rows, and the batch-invariant algorithm may split it (in a fixed order).
enum class Rows : uint8_t { kept_apart, summed_over };

// The algorithms whose kernels add a bias in the GEMM's epilogue (kernel_list.h); the others
// (the reference algorithms) leave it to a separate add.
bool bias_in_epilogue(const ComputeMode& mode);
// The algorithms whose CUDA kernels have the GELU and dGELU epilogues (the same: cuBLASLt's,
// standard or pinned).
bool gelu_epilogues(const ComputeMode& mode);

// What rides on a product besides its operands (linear's extras), each optional:
//   bias, residual  added in the product's epilogue (2-D operands, an algorithm that
//                   bias_in_epilogue names): the bias N values, the residual of the product's
//                   shape. A residual whose dtype is not the product's is added after it.
//   gelu_out        (the bf16 precision's products on CUDA's cuBLASLt algorithms, 2-D, no
//                   residual: what linear_gelu checks) the epilogue also applies GELU: *gelu_out
//                   receives gelu(a @ b + bias) with no autograd record, and the returned product
//                   keeps matmul's.
//   weight          linear's (N, K) leaf whose transpose b is. Under bf16 precision on CUDA's
//                   standard algorithm, when the weight's gradient lives in a buffer
//                   (leaf_gradient_buffer), the backward adds g^T a into it in the GEMM's
//                   epilogue instead of returning b's gradient: no separate add of a transposed
//                   (K, N) product into the (N, K) buffer.
//   a_gelu_input    linear's gelu_input: a = gelu(a_gelu_input), tanh form. Where the dGELU
//                   epilogue applies (linear's conditions, checked here), the record's input is
//                   a_gelu_input instead of a, and the backward's input-gradient product applies
//                   GELU's backward in its epilogue.
struct ProductExtras {
  Tensor bias, residual;
  Tensor* gelu_out = nullptr;
  Tensor weight, a_gelu_input;
};

// a @ b with autograd, its batch dims broadcast, in `mode`, with `extras`.
Tensor matmul_rows(const Tensor& a, const Tensor& b, const ComputeMode& mode, Consumer consumer,
                   Rows rows, const ProductExtras& extras = {});

}  // namespace bg
