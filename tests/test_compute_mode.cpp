// test_compute_mode.cpp: the compute mode's one home. Every enum's names round-trip and parse
// exactly; the config keys, checkpoint attributes and the mode comparison agree; and every
// MatmulAlgo x precision x deterministic mode runs through every op that takes a mode (matmul,
// bitlinear, the fused attention): it computes when the op's supports() allows it and is refused
// in one line with that reason otherwise, so a new algorithm cannot pass through an op silently.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/bitlinear.h"
#include "core/checkpoint.h"
#include "core/config.h"
#include "harness.h"
#include "layers/linear.h"
#include "models/gpt/gpt.h"

namespace bg {
namespace {

template <typename E>
void check_names_round_trip() {
  for (E v : enum_values<E>()) {
    E back{};
    REQUIRE(parse_enum(enum_name(v), &back));
    CHECK(back == v);
    // Exact matching: another case is another name.
    std::string upper = enum_name(v);
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (upper != enum_name(v)) CHECK_FALSE(parse_enum(upper, &back));
  }
  E untouched = E(0);
  CHECK_FALSE(parse_enum("no such name", &untouched));
  CHECK(untouched == E(0));
}

// Every mode the enums can spell: algo x precision x deterministic, L-Mul at 7 bits.
std::vector<ComputeMode> every_mode() {
  std::vector<ComputeMode> modes;
  for (MatmulAlgo algo : enum_values<MatmulAlgo>())
    for (MatmulPrecision p : enum_values<MatmulPrecision>())
      for (bool det : {false, true}) {
        ComputeMode m;
        m.algo = algo;
        m.precision = p;
        m.deterministic = det;
        m.lmul_mantissa_bits = 7;
        modes.push_back(m);
      }
  return modes;
}

// Runs `op` in `mode`: it must compute finite numbers when `why` is empty, and throw an error
// that carries `why` otherwise.
void run_or_refuse(const std::string& op, const ComputeMode& mode, const std::string& why,
                   const std::function<Tensor()>& run) {
  CAPTURE(op);
  const std::string mode_text = mode.str();
  CAPTURE(mode_text);
  if (why.empty()) {
    const Tensor y = run();
    for (float v : y.to(Device::cpu()).to(DType::f32).to_vector<float>()) REQUIRE(std::isfinite(v));
  } else {
    CHECK_THROWS_WITH(run(), doctest::Contains(why.c_str()));
  }
}

void check_every_mode_on(Device dev) {
  Generator gen(5);
  const Tensor a = randn({3, 5, 64}, gen).to(dev), b = randn({64, 7}, gen).to(dev);
  const Tensor w = randn({6, 64}, gen).to(dev);
  const Tensor qkv = randn({1, 8, 3 * 64}, gen).to(dev);
  int ran = 0, refused = 0;
  for (const ComputeMode& mode : every_mode()) {
    const std::string mm = matmul_supports(mode, dev);
    run_or_refuse("matmul", mode, mm, [&] { return matmul(a, b, mode); });
    const std::string bl = bitlinear_supports(mode, dev);
    run_or_refuse("bitlinear", mode, bl,
                  [&] { return bitlinear(a, w, Tensor(), BitLinearOptions(), mode); });
    const std::string fa = fused_attention_supports(mode, dev, 64);
    Generator drop(1);
    run_or_refuse("fused_causal_attention", mode, fa,
                  [&] { return fused_causal_attention(qkv, 1, 0.0, false, drop, mode); });
    for (const std::string* why : {&mm, &bl, &fa}) (why->empty() ? ran : refused) += 1;
  }
  // Both outcomes occur on every device: the allowlists are neither empty nor everything.
  CHECK(ran > 0);
  CHECK(refused > 0);
}

}  // namespace

TEST_CASE("cpu: every enum's names round-trip and parse exactly") {
  check_names_round_trip<MatmulAlgo>();
  check_names_round_trip<MatmulPrecision>();
  check_names_round_trip<MatmulSite>();
  check_names_round_trip<LmulScope>();
  check_names_round_trip<LinearKind>();
  check_names_round_trip<GeluForm>();
  check_names_round_trip<TernaryScale>();
  check_names_round_trip<BitNorm>();
  check_names_round_trip<SickVariant>();
  check_names_round_trip<SickPrecision>();
  check_names_round_trip<HeadKind>();
  check_names_round_trip<AttentionChoice>();
  CHECK(std::string(enum_name(BitNorm::rms)) == "rmsnorm");
  CHECK(std::string(enum_name(SickVariant::automatic)) == "auto");
  CHECK(enum_names_text<LmulScope>() == "attention, mlp or all");
}

TEST_CASE("cpu: every matmul algorithm x precision runs or is refused by each op in one line") {
  check_every_mode_on(Device::cpu());
}

TEST_CASE("cuda: every matmul algorithm x precision runs or is refused by each op in one line") {
  BG_REQUIRE_CUDA();
  check_every_mode_on(Device::cuda(0));
}

TEST_CASE("cpu: the mode's keys, checkpoint attributes and comparison agree") {
  const std::string dir = test::scratch_path("mode_test");
  std::filesystem::create_directories(dir);
  ConfigReader r("", {"train.matmul=lmul", "lmul.mantissa_bits=4", "lmul.scope=mlp",
                      "lmul.backward=exact", "train.deterministic=true"});
  const ComputeMode m = read_compute_mode(r);
  r.finish();
  CHECK(m.algo == MatmulAlgo::lmul);
  CHECK(m.deterministic);
  CHECK(m.lmul_mantissa_bits == 4);
  CHECK(m.lmul_scope == LmulScope::mlp);
  CHECK(m.lmul_exact_backward);
  {
    CheckpointWriter ck(dir + "/mode.h5");
    save_compute_mode(ck, m);
    ck.commit();
  }
  bool recorded = false;
  const ComputeMode back =
      load_compute_mode(CheckpointReader(dir + "/mode.h5"), "mode.h5", &recorded);
  CHECK(recorded);
  CHECK(back == m);
  CHECK(compute_mode_difference(back, m).empty());
  ComputeMode other = m;
  other.lmul_scope = LmulScope::all;
  CHECK(compute_mode_difference(m, other) == "lmul.scope: mlp vs all");
  // Every key that differs is named; lmul.* follow from train.matmul's difference.
  CHECK(compute_mode_difference(ComputeMode(), m) ==
        "train.deterministic: false vs true, train.matmul: standard vs lmul");
  CHECK(inference_mode(m) == m);  // deterministic and L-Mul runs infer in their own mode
  ComputeMode bf16;
  bf16.precision = MatmulPrecision::bf16;
  CHECK(inference_mode(bf16) == ComputeMode());
  // A file without the mode: recorded says so, and the default mode comes back.
  {
    CheckpointWriter ck(dir + "/none.h5");
    ck.attr("step", int64_t(1));
    ck.commit();
  }
  CHECK(load_compute_mode(CheckpointReader(dir + "/none.h5"), "none.h5", &recorded) ==
        ComputeMode());
  CHECK_FALSE(recorded);
  // Values are read exactly: another case, an unknown name or a number out of range is refused.
  auto refused = [&](const std::string& name, const std::string& attr, const std::string& text,
                     int64_t bits, const std::string& want) {
    CheckpointWriter ck(dir + "/" + name);
    save_compute_mode(ck, m);
    if (!attr.empty()) ck.attr(attr, text);
    ck.attr("lmul.mantissa_bits", bits);
    ck.commit();
    CHECK_THROWS_WITH(load_compute_mode(CheckpointReader(dir + "/" + name), name),
                      doctest::Contains(want.c_str()));
  };
  refused("case.h5", "compute_matmul", "LMUL", 4,
          "attribute compute_matmul is 'LMUL', expected standard or lmul");
  refused("scope.h5", "lmul.scope", "everywhere", 4, "lmul.scope is 'everywhere'");
  refused("bits.h5", "", "", 24, "lmul.mantissa_bits is 24, expected 1 to 23");
  refused("prec.h5", "compute_precision", "fp8", 4, "compute_precision is 'fp8'");
  std::filesystem::remove_all(dir);
}

TEST_CASE("cpu: the mode's keys refuse what cannot run, naming the key") {
  auto refused = [](std::vector<std::string> sets, const std::string& want) {
    ConfigReader r("", sets);
    CHECK_THROWS_WITH((read_compute_mode(r), r.finish()), doctest::Contains(want.c_str()));
  };
  refused({"train.matmul=lmul", "train.precision=bf16"}, "train.matmul: L-Mul multiplies f32");
  refused({"lmul.scope=mlp"}, "lmul.scope: not used when train.matmul is standard");
  refused({"train.matmul=LMUL"}, "train.matmul: 'LMUL' is not one of: standard, lmul");
  refused({"train.matmul=lmul", "lmul.mantissa_bits=0"}, "lmul.mantissa_bits");
  ConfigReader r("", {"train.deterministic=true", "train.precision=bf16"});
  CHECK_THROWS_WITH((read_compute_mode(r, ModeKeys::deterministic_only), r.finish()),
                    doctest::Contains("train.precision"));
}

}  // namespace bg
