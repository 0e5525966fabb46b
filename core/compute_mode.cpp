#include "compute_mode.h"

#include "checkpoint.h"
#include "config.h"
#include "error.h"

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

ComputeMode read_compute_mode(ConfigReader& r, ModeKeys keys) {
  ComputeMode m;
  // Batch-invariant arithmetic (docs/determinism.md): every matmul, forward and backward, runs
  // the batch-invariant algorithm, whose K order per output is fixed whatever the batch.
  if (keys == ModeKeys::deterministic_only) {
    m.deterministic = r.boolean("train.deterministic", false);
    if (m.deterministic) m.algo = MatmulAlgo::batch_invariant;
    return m;
  }
  // CUDA matmuls: fp32, tf32 or bf16 operands (fp32 accumulation, fp32 master weights,
  // activations and optimizer state in every mode). The CPU always computes in fp32.
  m.precision = r.choice("train.precision", MatmulPrecision::fp32);
  m.activations = r.choice("train.activations", ActivationDtype::fp32);
  if (m.activations == ActivationDtype::bf16 && m.precision != MatmulPrecision::bf16)
    r.fail_at("train.activations",
              "bf16 activations are the operands of bf16 matmuls; set train.precision: bf16");
  m.deterministic = r.boolean("train.deterministic", false);
  if (m.deterministic) m.algo = MatmulAlgo::batch_invariant;
  // L-Mul (docs/lmul.md): every multiply of the matmuls lmul.scope covers is an integer add.
  if (r.choice("train.matmul", MatmulChoice::standard) == MatmulChoice::lmul) {
    if (m.precision != MatmulPrecision::fp32)
      r.fail_at("train.matmul",
                "L-Mul multiplies f32 operands rounded to lmul.mantissa_bits; "
                "train.precision must be fp32");
    m.algo = MatmulAlgo::lmul;
    m.lmul_mantissa_bits =
        int(r.integer("lmul.mantissa_bits", kMaxMantissaBits, kMinMantissaBits, kMaxMantissaBits));
    m.lmul_scope = r.choice("lmul.scope", LmulScope::all);
    m.lmul_exact_backward = r.choice("lmul.backward", LmulBackward::lmul) == LmulBackward::exact;
  } else {
    r.not_used("lmul", "train.matmul is standard");
  }
  return m;
}

namespace {
MatmulChoice matmul_choice(const ComputeMode& m) {
  return m.algo == MatmulAlgo::lmul ? MatmulChoice::lmul : MatmulChoice::standard;
}
template <typename E>
E read_enum_attr(const CheckpointReader& ck, const std::string& path, const std::string& name) {
  const std::string text = ck.str_attr(name);
  E v{};
  BG_CHECK(parse_enum(text, &v), "checkpoint", path, ": attribute ", name, " is '", text,
           "', expected ", enum_names_text<E>());
  return v;
}
}  // namespace

void save_compute_mode(CheckpointWriter& ck, const ComputeMode& mode) {
  ck.attr("compute_precision", std::string(enum_name(mode.precision)));
  ck.attr("compute_activations", std::string(enum_name(mode.activations)));
  ck.attr("compute_deterministic", int64_t(mode.deterministic ? 1 : 0));
  ck.attr("compute_matmul", std::string(enum_name(matmul_choice(mode))));
  if (mode.algo == MatmulAlgo::lmul) {
    ck.attr("lmul.mantissa_bits", int64_t(mode.lmul_mantissa_bits));
    ck.attr("lmul.scope", std::string(enum_name(mode.lmul_scope)));
    ck.attr("lmul.backward", std::string(enum_name(mode.lmul_exact_backward ? LmulBackward::exact
                                                                            : LmulBackward::lmul)));
  }
}

ComputeMode load_compute_mode(const CheckpointReader& ck, const std::string& path, bool* recorded) {
  ComputeMode m;
  if (recorded) *recorded = ck.has_attr("compute_precision");
  if (!ck.has_attr("compute_precision")) return m;
  m.precision = read_enum_attr<MatmulPrecision>(ck, path, "compute_precision");
  // Checkpoints before train.activations kept f32 activations.
  if (ck.has_attr("compute_activations")) {
    m.activations = read_enum_attr<ActivationDtype>(ck, path, "compute_activations");
    BG_CHECK(m.activations == ActivationDtype::fp32 || m.precision == MatmulPrecision::bf16,
             "checkpoint", path, ": compute_activations bf16 with compute_precision ",
             enum_name(m.precision), " (bf16 activations run under bf16 precision only)");
  }
  const int64_t det = ck.int_attr("compute_deterministic");
  BG_CHECK(det == 0 || det == 1, "checkpoint", path, ": attribute compute_deterministic is ", det,
           ", expected 0 or 1");
  m.deterministic = det == 1;
  if (m.deterministic) m.algo = MatmulAlgo::batch_invariant;
  // Checkpoints before L-Mul recorded no compute_matmul: they multiplied exactly.
  const MatmulChoice choice = ck.has_attr("compute_matmul")
                                  ? read_enum_attr<MatmulChoice>(ck, path, "compute_matmul")
                                  : MatmulChoice::standard;
  if (choice == MatmulChoice::lmul) {
    BG_CHECK(m.precision == MatmulPrecision::fp32, "checkpoint", path,
             ": compute_matmul lmul with compute_precision ", enum_name(m.precision),
             " (L-Mul runs fp32 only)");
    m.algo = MatmulAlgo::lmul;
    const int64_t bits = ck.int_attr("lmul.mantissa_bits");
    BG_CHECK(bits >= kMinMantissaBits && bits <= kMaxMantissaBits, "checkpoint", path,
             ": attribute lmul.mantissa_bits is ", bits, ", expected ", kMinMantissaBits, " to ",
             kMaxMantissaBits);
    m.lmul_mantissa_bits = int(bits);
    m.lmul_scope = read_enum_attr<LmulScope>(ck, path, "lmul.scope");
    m.lmul_exact_backward =
        read_enum_attr<LmulBackward>(ck, path, "lmul.backward") == LmulBackward::exact;
  }
  return m;
}

void copy_compute_mode(const CheckpointReader& from, const std::string& path,
                       CheckpointWriter& to) {
  bool recorded = false;
  const ComputeMode m = load_compute_mode(from, path, &recorded);  // checks every value
  if (recorded) save_compute_mode(to, m);
}

std::string compute_mode_difference(const ComputeMode& a, const ComputeMode& b) {
  auto differ = [](const char* key, const std::string& x, const std::string& y) {
    return x == y ? std::string() : str_cat(key, ": ", x, " vs ", y);
  };
  std::string d = differ("train.precision", enum_name(a.precision), enum_name(b.precision));
  if (d.empty())
    d = differ("train.activations", enum_name(a.activations), enum_name(b.activations));
  if (d.empty())
    d = differ("train.deterministic", a.deterministic ? "true" : "false",
               b.deterministic ? "true" : "false");
  if (d.empty())
    d = differ("train.matmul", enum_name(matmul_choice(a)), enum_name(matmul_choice(b)));
  if (d.empty() && a.algo == MatmulAlgo::lmul && b.algo == MatmulAlgo::lmul) {
    d = differ("lmul.mantissa_bits", std::to_string(a.lmul_mantissa_bits),
               std::to_string(b.lmul_mantissa_bits));
    if (d.empty()) d = differ("lmul.scope", enum_name(a.lmul_scope), enum_name(b.lmul_scope));
    if (d.empty())
      d = differ("lmul.backward", a.lmul_exact_backward ? "exact" : "lmul",
                 b.lmul_exact_backward ? "exact" : "lmul");
  }
  return d;
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
