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

class ConfigReader;
class CheckpointWriter;
class CheckpointReader;

// Which kernels compute a matmul. Adding an algorithm (docs/architecture.md walks through it):
// an entry here, a kernel pair (kernels/cpu and kernels/cuda, declared in kernels/kernel_list.h),
// one line in core/ops/matmul.cpp's run_matmul_kernel, and its row in every op's supports().
//   standard:        cuBLAS on CUDA, Eigen on the CPU
//   naive:           one output per thread, k in order with fused multiply-adds: the CPU and
//                    CUDA give the same bits (the worked example; used by tests)
//   batch_invariant: train.deterministic: a row's bits never depend on M, the batch or the SM
//                    count (pinned cuBLASLt on CUDA, the naive chain on the CPU)
//   lmul:            every multiply an L-Mul (kernels/lmul.h, docs/lmul.md), f32 adds over k in
//                    order: the CPU and CUDA give the same bits, and no batch can change a row
#define BG_MATMUL_ALGOS(X) \
  X(standard, "standard") X(naive, "naive") X(batch_invariant, "batch_invariant") X(lmul, "lmul")
BG_NAMED_ENUM(MatmulAlgo, BG_MATMUL_ALGOS)

// Where a matmul sits in a model: what lmul.scope selects. attention: the QK^T and PV products;
// projection: attention's c_attn and c_proj; mlp: the MLP's c_fc and c_proj; lm_head: the head.
#define BG_MATMUL_SITES(X) \
  X(attention, "attention") X(projection, "projection") X(mlp, "mlp") X(lm_head, "lm_head")
BG_NAMED_ENUM(MatmulSite, BG_MATMUL_SITES)
// lmul.scope: which sites multiply by L-Mul. attention: the attention products; mlp: the MLP's
// linears; all: every matmul (attention, every linear, the LM head).
#define BG_LMUL_SCOPES(X) X(attention, "attention") X(mlp, "mlp") X(all, "all")
BG_NAMED_ENUM(LmulScope, BG_LMUL_SCOPES)

// train.activations: the dtype the model's activations are stored in on CUDA. fp32: the residual
// stream, the norms' inputs and every product not read by a matmul or a loss stay f32. bf16
// (under train.precision: bf16; llm.c's layout): the residual stream, the LayerNorms' inputs and
// outputs, every product, GELU and dropout in bf16, and so the gradients flowing back through
// them; parameters, their gradients, the optimizer state, the norms' statistics and every
// reduction stay f32. The CPU computes fp32 whatever the value.
#define BG_ACTIVATION_DTYPES(X) X(fp32, "fp32") X(bf16, "bf16")
BG_NAMED_ENUM(ActivationDtype, BG_ACTIVATION_DTYPES)

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
  ActivationDtype activations = ActivationDtype::fp32;

  bool operator==(const ComputeMode& o) const {
    return precision == o.precision && activations == o.activations && algo == o.algo &&
           deterministic == o.deterministic &&
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
  // "bf16", "bf16 bf16-activations", "fp32 naive", "fp32 deterministic", "fp32 lmul m7"
  std::string str() const;
  // The mode gradients of this mode's products are computed in: itself, except that L-Mul with
  // an exact backward multiplies exactly (the batch-invariant GEMM when deterministic).
  ComputeMode backward() const;
  // The mode a matmul at `site` runs in: L-Mul where lmul.scope covers the site; elsewhere the
  // exact algorithm (the batch-invariant one when deterministic). Layers pass this to their
  // matmuls, so one mode value serves the whole model.
  ComputeMode at(MatmulSite site) const;

  // The mode as it runs on `device`: the CPU computes fp32 (train.precision names the CUDA
  // matmuls' operand rounding, train.activations CUDA's storage), so bf16 and tf32 become fp32
  // there. Ops refuse a mode that
  // their device does not run; apps and tests resolve it once with this.
  ComputeMode on(Device device) const;
};

// The mode's declared fields (core/settings.h), kRecorded: train.precision,
// train.activations, train.deterministic, train.matmul and, for L-Mul, lmul.mantissa_bits,
// lmul.scope and lmul.backward. Saved in a checkpoint as compute_precision,
// compute_activations, compute_deterministic, compute_matmul (the names files had before the
// keys) and lmul.*, so that resume compares the mode and sample, eval and export reproduce it;
// every value is read back exactly, a name or number out of range refused naming the file and
// attribute. fit-bide, whose SICK pass has no matmul to choose, offers train.deterministic
// alone (deterministic_mode_settings).
template <typename S>
class Settings;
const Settings<ComputeMode>& compute_mode_settings();
const Settings<ComputeMode>& deterministic_mode_settings();
// The rules between the fields: bf16 activations under bf16 precision, L-Mul under fp32. The
// key to blame (empty: none) and why.
std::pair<std::string, std::string> compute_mode_problem(const ComputeMode& m);

enum class ModeKeys : uint8_t { all, deterministic_only };
// The list's keys read and its rules checked, each refusal naming the key.
ComputeMode read_compute_mode(ConfigReader& r, ModeKeys keys = ModeKeys::all);
// `recorded` says whether the file holds the mode at all (checkpoints before the mode was
// recorded do not: they ran fp32 standard).
void save_compute_mode(CheckpointWriter& ck, const ComputeMode& mode);
ComputeMode load_compute_mode(const CheckpointReader& ck, const std::string& path,
                              bool* recorded = nullptr);
// Copies the mode's attributes from one file to another as they are (export).
void copy_compute_mode(const CheckpointReader& from, const std::string& path, CheckpointWriter& to);
// "" when a and b compute alike; else each config key whose value differs, with both values:
// "train.matmul: lmul vs standard".
std::string compute_mode_difference(const ComputeMode& a, const ComputeMode& b);
// The mode sample and eval run a trained model in: a deterministic run's own mode (sampler =
// trainer, bit for bit), an L-Mul run's multiplies; otherwise fp32 matmuls.
ComputeMode inference_mode(const ComputeMode& trained);

// Who reads an op's output: anything; only matmuls (and the attention kernel) of a mode; or only
// a loss that widens its input to f32 (an LM head's logits, read by the cross-entropy).
enum class Consumer : uint8_t { any, matmul, loss };

// The one rule for narrowed storage. An op whose output x-like tensor (dtype `natural`, on
// `device`) is read only by matmuls of `mode` stores it in the dtype those matmuls round their
// operands to (bf16 for f32 under bf16 precision on CUDA): the same bits they would read after
// their own cast, with one pass and half the bytes fewer. Logits read only by the loss are
// stored the same way under bf16 precision (as PyTorch's autocast and llm.c keep them): the
// loss and its gradient then move half the bytes of the (tokens x vocabulary) tensor.
// Under train.activations: bf16 every such f32 output is stored in bf16, whoever reads it.
// Otherwise `natural`.
DType stored_dtype(const ComputeMode& mode, Consumer consumer, DType natural, Device device);
// The dtype a model's residual stream is kept in: bf16 under train.activations: bf16 on CUDA,
// else f32.
DType activation_dtype(const ComputeMode& mode, Device device);

}  // namespace bg
