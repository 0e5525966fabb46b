// bench_bide_head.cpp: `bitgrad bench bide_head`: a GPT's output head, forward + backward from
// the final hidden states (N, 768) to the loss and back to them, at the SICK BIDE paper's B.3
// setting (16,384 positions = 32 x 512, 16 bits, H = 32) and at 65,536 positions. The BIDE head
// (two bias-free projections to W and r, SICK's fused NLL over the GPT-2 vocabulary's 50,257 of
// 65,536 patterns; SICK in fp16 and fp32) against the softmax head (tied 50,304 x 768 bf16
// products + cross-entropy), both in bf16 precision, the same hidden states; and the hybrid
// head (a softmax over the 1,024 or 4,096 most frequent ids, the BIDE over the rest). Median
// milliseconds over rotated inputs, and each head's extra peak memory over its inputs. JSON.
// The softmax head's loss goes in row chunks (linear_cross_entropy), which make the gradients
// beside the logits: its fwd_ms holds them, and its backward only scales.
#include <cstdio>

#include "bench_common.h"
#include "core/allocator.h"
#include "core/optim.h"
#include "kernels/cuda/device_runtime.h"
#include "models/gpt/gpt_head.h"

namespace bg::cli {

int run_bench_bide_head(const Args& args) {
  args.allow_only({"out", "reps"});
  BG_CHECK(args.positional.size() == 1, "bench",
           "usage: bitgrad bench bide_head [--out FILE] [--reps N]");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the head benchmark times GPU kernels");
  const int reps = int(parse_integer(args.option("reps", "20"), "--reps", 5, 100000));
  const Device dev = Device::cuda(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  constexpr int64_t kEmbd = 768, kVocab = 50257, kPadded = 50304;
  ComputeMode bf16;
  bf16.precision = MatmulPrecision::bf16;
  BenchReport report("bide_head", info.name);
  report.settings().add("reps", reps).add("n_embd", kEmbd).add("vocab", kVocab);
  std::printf("%-8s %-30s %10s %10s %12s\n", "N", "head", "fwd+bwd_ms", "fwd_ms", "extra_MiB");
  for (const int64_t n : {int64_t(16384), int64_t(65536)}) {
    Generator gen(1);
    std::vector<Tensor> hs;
    for (int i = 0; i < 2; ++i) hs.push_back(randn({n, kEmbd}, gen, 0, 1, DType::f32, dev));
    std::vector<int64_t> ids(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = (i * 7919) % kVocab;
    const Tensor targets = from_vector(ids, {n}, dev);
    struct Head {
      std::string name;
      std::shared_ptr<GPTHead> head;
      FlatParameters params;
    };
    std::vector<Head> heads;
    {
      Generator init(2);
      auto wte = std::make_shared<Embedding>(kPadded, kEmbd, init, 0.02);
      auto tied = std::make_shared<TiedSoftmaxHead>(wte, HeadKind::softmax, BitLinearOptions());
      tied->set_compute_mode(bf16);
      heads.push_back({"softmax (tied, bf16)", tied, FlatParameters(wte->named_parameters(), dev)});
      for (SickPrecision p : {SickPrecision::fp16, SickPrecision::fp32}) {
        BideHeadSpec spec;
        spec.bits = 16;
        spec.hidden = 32;
        spec.support = kVocab;
        spec.precision = p;
        auto bide = std::make_shared<BideTokenHead>(kEmbd, spec, init);
        bide->set_compute_mode(bf16);
        heads.push_back({std::string("bide H32 sick ") + enum_name(p), bide,
                         FlatParameters(bide->named_parameters(), dev)});
      }
      // The hybrid: a softmax over the K most frequent ids (here the code is the identity:
      // what a frequency code costs is one gather of the targets), fp16 SICK over the rest.
      std::vector<int64_t> identity(static_cast<size_t>(kVocab));
      for (int64_t i = 0; i < kVocab; ++i) identity[size_t(i)] = i;
      for (int64_t k : {int64_t(1024), int64_t(4096)}) {
        BideHeadSpec spec;
        spec.bits = 16;
        spec.hidden = 32;
        spec.support = kVocab;
        spec.precision = SickPrecision::fp16;
        spec.code = BideTokenCode::frequency;
        spec.softmax_ids = k;
        auto hybrid = std::make_shared<BideTokenHead>(kEmbd, spec, init);
        hybrid->set_code(identity);
        hybrid->set_compute_mode(bf16);
        heads.push_back({"bide H32 fp16 + softmax " + std::to_string(k), hybrid,
                         FlatParameters(hybrid->named_parameters(), dev)});
      }
    }
    for (Head& h : heads) {
      std::vector<double> both, fwd;
      synchronize(dev);
      const size_t base = cuda_allocator_stats(dev.index).allocated;
      cuda_reset_peak(dev.index);
      for (int it = 0; it < reps + 3; ++it) {
        const Tensor x = hs[size_t(it % 2)].detach().requires_grad_(true);
        h.params.zero_grad();
        Tensor loss;
        const double tf = bench_time_ms(dev, [&] { loss = h.head->loss(x, targets); });
        const double tb = bench_time_ms(dev, [&] { loss.backward(); });
        if (it >= 3) {
          fwd.push_back(tf);
          both.push_back(tf + tb);
        }
      }
      synchronize(dev);
      const double extra =
          double(cuda_allocator_stats(dev.index).peak_allocated - base) / 1048576.0;
      const double b = median(both), f = median(fwd);
      std::printf("%-8lld %-30s %10.3f %10.3f %12.1f\n", (long long)n, h.name.c_str(), b, f, extra);
      report.row(JsonObject()
                     .add("positions", n)
                     .add("head", h.name)
                     .add("fwd_bwd_ms", b)
                     .add("fwd_ms", f)
                     .add("extra_peak_mib", extra));
    }
  }
  report.write(args);
  return 0;
}

}  // namespace bg::cli
