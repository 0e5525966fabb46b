// compute_mode.h: how a run's arithmetic is done, as one explicit value. It is set once per run
// from the config (train.precision, model.attention's choice follows it), handed to the model
// (Module::set_compute_mode) and passed by the layers to every matmul: Linear, the LM head,
// composed attention and the fused attention kernel's products. An op either honours the mode
// or refuses it with a one-line error; it never computes something else. There is no
// process-wide setting: two models in one process may run in different modes.
#pragma once
#include <string>

#include "tensor.h"

namespace bg {

// Which kernels compute a matmul. Adding an algorithm (docs/architecture.md walks through it):
// a value here and its name in matmul_algo_name, a kernel pair (kernels/cpu and kernels/cuda,
// declared in kernels/kernel_list.h) and one line in core/ops/matmul.cpp's run_matmul_kernel.
enum class MatmulAlgo : uint8_t {
  standard,  // cuBLAS on CUDA, Eigen on the CPU
  naive,     // one output per thread, k in order with fused multiply-adds: the CPU and CUDA give
             // the same bits (the worked example; used by tests)
  batch_invariant,  // train.deterministic: a row's bits never depend on M, the batch or the SM
                    // count (pinned cuBLASLt on CUDA, the naive chain on the CPU)
  lmul,  // every multiply an L-Mul (kernels/lmul.h, docs/lmul.md), f32 adds over k in order:
         // the CPU and CUDA give the same bits, and no batch can change a row
};
const char* matmul_algo_name(MatmulAlgo algo);

// Where a matmul sits in a model: what lmul.scope selects. attention: the QK^T and PV products;
// projection: attention's c_attn and c_proj; mlp: the MLP's c_fc and c_proj; lm_head: the head.
enum class MatmulSite : uint8_t { attention, projection, mlp, lm_head };
// lmul.scope: which sites multiply by L-Mul. attention: the attention products; mlp: the MLP's
// linears; all: every matmul (attention, every linear, the LM head).
enum class LmulScope : uint8_t { attention, mlp, all };
const char* lmul_scope_name(LmulScope s);
bool parse_lmul_scope(const std::string& name, LmulScope* out);

struct ComputeMode {
  // CUDA matmuls of f32 operands: fp32, tf32 (tensor cores, 10-bit mantissa inputs) or bf16
  // (operands rounded to bf16 once); fp32 accumulation, fp32 master weights always.
  MatmulPrecision precision = MatmulPrecision::fp32;
  MatmulAlgo algo = MatmulAlgo::standard;
  // Bit-identical results run to run and whatever the batch (train.deterministic). matmul
  // honours it with a batch-invariant algorithm (batch_invariant, naive) and refuses it with
  // cuBLAS's; the fused attention honours it (its tiles never depend on the batch).
  bool deterministic = false;
  // MatmulAlgo::lmul: the operands' mantissa width (lmul.mantissa_bits, 1..23: 23 is fp32, 7
  // bf16's, 10 fp16's, 4 and 3 the fp8-like widths) and whether gradients multiply exactly
  // (lmul.backward: exact) or by L-Mul too.
  int lmul_mantissa_bits = 23;
  bool lmul_exact_backward = false;
  LmulScope lmul_scope = LmulScope::all;

  bool operator==(const ComputeMode& o) const {
    return precision == o.precision && algo == o.algo && deterministic == o.deterministic &&
           lmul_mantissa_bits == o.lmul_mantissa_bits &&
           lmul_exact_backward == o.lmul_exact_backward && lmul_scope == o.lmul_scope;
  }
  bool operator!=(const ComputeMode& o) const { return !(*this == o); }
  // train.deterministic's mode in `precision`: the flag and the batch-invariant algorithm.
  static ComputeMode deterministic_mode(MatmulPrecision precision = MatmulPrecision::fp32) {
    ComputeMode m;
    m.precision = precision;
    m.algo = MatmulAlgo::batch_invariant;
    m.deterministic = true;
    return m;
  }
  std::string str() const;  // "bf16", "fp32 naive", "fp32 deterministic", "fp32 lmul m7"
  // The mode gradients of this mode's products are computed in: itself, except that L-Mul with
  // an exact backward multiplies exactly (the batch-invariant GEMM when deterministic).
  ComputeMode backward() const;
  // The mode a matmul at `site` runs in: L-Mul where lmul.scope covers the site; elsewhere the
  // exact algorithm (the batch-invariant one when deterministic). Layers pass this to their
  // matmuls, so one mode value serves the whole model.
  ComputeMode at(MatmulSite site) const;

  // The mode as it runs on `device`: the CPU computes fp32 (train.precision names the CUDA
  // matmuls' operand rounding), so bf16 and tf32 become fp32 there. Ops refuse a mode that
  // their device does not run; apps and tests resolve it once with this.
  ComputeMode on(Device device) const;
};

const char* precision_name(MatmulPrecision p);

// Who reads an op's output: anything, or only matmuls (and the attention kernel) of a mode.
enum class Consumer : uint8_t { any, matmul };

// The one rule for narrowed storage. An op whose output x-like tensor (dtype `natural`, on
// `device`) is read only by matmuls of `mode` stores it in the dtype those matmuls round their
// operands to (bf16 for f32 under bf16 precision on CUDA): the same bits they would read after
// their own cast, with one pass and half the bytes fewer. Otherwise `natural`.
DType stored_dtype(const ComputeMode& mode, Consumer consumer, DType natural, Device device);

}  // namespace bg
