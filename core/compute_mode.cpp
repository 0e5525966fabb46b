#include "compute_mode.h"

#include "checkpoint.h"
#include "config.h"
#include "error.h"
#include "settings.h"

namespace bg {

// train.matmul's values: the exact product (standard; batch_invariant under train.deterministic)
// or L-Mul.
#define BG_MATMUL_CHOICES(X) X(standard, "standard") X(lmul, "lmul")
BG_NAMED_ENUM(MatmulChoice, BG_MATMUL_CHOICES)
#define BG_LMUL_BACKWARDS(X) X(lmul, "lmul") X(exact, "exact")
BG_NAMED_ENUM(LmulBackward, BG_LMUL_BACKWARDS)

std::string ComputeMode::str() const {
  std::string s = enum_name(precision);
  if (algo != MatmulAlgo::standard) s += std::string(" ") + enum_name(algo);
  if (algo == MatmulAlgo::lmul) {
    s += " m" + std::to_string(lmul_mantissa_bits) + " " + enum_name(lmul_scope);
    if (lmul_exact_backward) s += " exact-backward";
  }
  if (activations == ActivationDtype::bf16) s += " bf16-activations";
  if (deterministic) s += " deterministic";
  return s;
}

namespace {
constexpr int64_t kMinMantissaBits = 1, kMaxMantissaBits = 23;

// The algorithm a product runs where L-Mul does not apply: exact, batch-invariant when the
// mode is deterministic.
MatmulAlgo exact_algo(const ComputeMode& mode) {
  return mode.deterministic ? MatmulAlgo::batch_invariant : MatmulAlgo::standard;
}
}  // namespace

ComputeMode ComputeMode::at(MatmulSite site) const {
  if (algo != MatmulAlgo::lmul) return *this;
  const bool in_scope = lmul_scope == LmulScope::all ||
                        (lmul_scope == LmulScope::attention && site == MatmulSite::attention) ||
                        (lmul_scope == LmulScope::mlp && site == MatmulSite::mlp);
  if (in_scope) return *this;
  ComputeMode m = *this;
  m.algo = exact_algo(*this);
  return m;
}

ComputeMode ComputeMode::backward() const {
  ComputeMode m = *this;
  if (algo == MatmulAlgo::lmul && lmul_exact_backward) m.algo = exact_algo(*this);
  return m;
}

namespace {
MatmulChoice matmul_choice(const ComputeMode& m) {
  return m.algo == MatmulAlgo::lmul ? MatmulChoice::lmul : MatmulChoice::standard;
}

// train.deterministic and train.matmul both set the algorithm: L-Mul where chosen, else the
// exact product, batch-invariant under the flag (docs/determinism.md: every matmul, forward
// and backward, runs the algorithm whose K order per output is fixed whatever the batch).
void set_deterministic(ComputeMode& m, bool on) {
  m.deterministic = on;
  if (m.algo != MatmulAlgo::lmul) m.algo = exact_algo(m);
}
void set_matmul(ComputeMode& m, MatmulChoice c) {
  m.algo = c == MatmulChoice::lmul ? MatmulAlgo::lmul : exact_algo(m);
}

const char* const kDeterministicMeaning =
    "batch-invariant arithmetic: the same bits run to run and whatever the batch "
    "(docs/determinism.md)";
}  // namespace

const Settings<ComputeMode>& compute_mode_settings() {
  static const Settings<ComputeMode> s = [] {
    Settings<ComputeMode> s;
    // CUDA matmuls: fp32, tf32 or bf16 operands (fp32 accumulation, fp32 master weights and
    // optimizer state in every mode). The CPU always computes in fp32.
    s.choice("train.precision", [](auto& m) -> auto& { return m.precision; },
             "CUDA matmul operands: fp32, tf32 or bf16 (fp32 accumulation and master weights; "
             "the CPU computes fp32)",
             kRecorded)
        .saved_as("compute_precision");
    // Files before train.activations kept f32 activations.
    s.choice("train.activations", [](auto& m) -> auto& { return m.activations; },
             "CUDA activations: fp32, or bf16 (the residual stream, norms, GELU and dropout "
             "stored in bf16; needs train.precision: bf16; fp32 weights, optimizer state and "
             "reductions)",
             kRecorded | kOptional)
        .saved_as("compute_activations");
    s.boolean("train.deterministic", [](const ComputeMode& m) { return m.deterministic; },
              set_deterministic, kDeterministicMeaning, kRecorded)
        .saved_as("compute_deterministic");
    // L-Mul (docs/lmul.md): every multiply of the matmuls lmul.scope covers is an integer add.
    // Files before L-Mul recorded no compute_matmul: they multiplied exactly.
    s.choice<MatmulChoice>("train.matmul", matmul_choice, set_matmul,
                           "standard, or lmul: multiplies as L-Mul integer adds (docs/lmul.md)",
                           kRecorded | kOptional)
        .saved_as("compute_matmul");
    s.when([](const ComputeMode& m) { return m.algo == MatmulAlgo::lmul; },
           [](const ComputeMode&) { return std::string("train.matmul is standard"); });
    s.integer("lmul.mantissa_bits", [](auto& m) -> auto& { return m.lmul_mantissa_bits; },
              kMinMantissaBits, kMaxMantissaBits,
              "operands rounded to this many mantissa bits (7: bf16's)", kRecorded);
    s.choice("lmul.scope", [](auto& m) -> auto& { return m.lmul_scope; },
             "which matmuls multiply by L-Mul: attention, mlp or all", kRecorded);
    s.choice<LmulBackward>(
        "lmul.backward",
        [](const ComputeMode& m) {
          return m.lmul_exact_backward ? LmulBackward::exact : LmulBackward::lmul;
        },
        [](ComputeMode& m, LmulBackward b) { m.lmul_exact_backward = b == LmulBackward::exact; },
        "the gradients' products: lmul too, or exact", kRecorded);
    return s;
  }();
  return s;
}

const Settings<ComputeMode>& deterministic_mode_settings() {
  static const Settings<ComputeMode> s = [] {
    Settings<ComputeMode> s;
    s.boolean("train.deterministic", [](const ComputeMode& m) { return m.deterministic; },
              set_deterministic, kDeterministicMeaning, kRecorded);
    return s;
  }();
  return s;
}

std::pair<std::string, std::string> compute_mode_problem(const ComputeMode& m) {
  if (m.activations == ActivationDtype::bf16 && m.precision != MatmulPrecision::bf16)
    return {"train.activations",
            "bf16 activations are the operands of bf16 matmuls; set train.precision: bf16"};
  if (m.algo == MatmulAlgo::lmul && m.precision != MatmulPrecision::fp32)
    return {"train.matmul",
            "L-Mul multiplies f32 operands rounded to lmul.mantissa_bits; train.precision must "
            "be fp32"};
  return {};
}

ComputeMode read_compute_mode(ConfigReader& r, ModeKeys keys) {
  ComputeMode m;
  (keys == ModeKeys::all ? compute_mode_settings() : deterministic_mode_settings()).read(r, m);
  const auto [key, why] = compute_mode_problem(m);
  if (!key.empty()) r.fail_at(key, why);
  return m;
}

void save_compute_mode(CheckpointWriter& ck, const ComputeMode& mode) {
  compute_mode_settings().save(ck, mode, kRecorded);
}

ComputeMode load_compute_mode(const CheckpointReader& ck, const std::string& path, bool* recorded) {
  if (recorded) *recorded = ck.has_attr("compute_precision");
  if (!ck.has_attr("compute_precision")) return ComputeMode();
  const ComputeMode m = compute_mode_settings().load(ck, path, kRecorded);
  const auto [key, why] = compute_mode_problem(m);
  BG_CHECK(key.empty(), "checkpoint", path, ": the recorded mode's ", key, ": ", why);
  return m;
}

void copy_compute_mode(const CheckpointReader& from, const std::string& path,
                       CheckpointWriter& to) {
  bool recorded = false;
  const ComputeMode m = load_compute_mode(from, path, &recorded);  // checks every value
  if (recorded) save_compute_mode(to, m);
}

std::string compute_mode_difference(const ComputeMode& a, const ComputeMode& b) {
  return compute_mode_settings().difference(a, b, kRecorded);
}

ComputeMode inference_mode(const ComputeMode& trained) {
  if (trained.deterministic || trained.algo == MatmulAlgo::lmul) return trained;
  return ComputeMode();
}

ComputeMode ComputeMode::on(Device device) const {
  ComputeMode m = *this;
  if (!device.is_cuda()) {
    m.precision = MatmulPrecision::fp32;
    m.activations = ActivationDtype::fp32;
  }
  return m;
}

DType stored_dtype(const ComputeMode& mode, Consumer consumer, DType natural, Device device) {
  const bool narrowed = consumer != Consumer::any || mode.activations == ActivationDtype::bf16;
  return narrowed && device.is_cuda() && natural == DType::f32 &&
                 mode.precision == MatmulPrecision::bf16
             ? DType::bf16
             : natural;
}

DType activation_dtype(const ComputeMode& mode, Device device) {
  return device.is_cuda() && mode.activations == ActivationDtype::bf16 ? DType::bf16
                                                                        : DType::f32;
}

}  // namespace bg
