// check_determinism.cpp: `bitgrad check-determinism CONFIG [--runs N] [--steps S]`: the
// end-to-end check of train.deterministic for a `bitgrad train` config, on the config's device.
//  1. run to run: N short runs of the config in the mode; every checkpoint dataset (parameters,
//     optimizer state) must be bitwise equal across the runs;
//  2. batch invariance: a window's head outputs and its own input gradient (d loss / d its
//     embeddings, the loss summed so no batch mean enters) alone must equal the same window
//     inside batches of 7 and B at the first, middle and last place (LanguageModel::probe);
//  3. sampler = trainer: where the sampler has a decoder of its own (the GPT's KV cache), its
//     head outputs, one token at a time, must equal the training forward's at every position
//     of a window inside a batch of B.
// B is 64; where a batch of 64 does not fit the GPU (GPT-2 124M's 64 sequences of 1,024 with
// gradients need more than an H100's 80 GB), the config's train.batch_size (at least 8), a
// batch the run itself held, and the row says so.
// With --record FILE it writes the first run's checkpoint digests (determinism_record.h); with
// --compare FILE it checks them against another machine's record: the same bits on two GPUs.
// Prints a table; exits 1 naming the first differing tensor and element, 0 when all agree.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "cli.h"
#include "models/train_run.h"
#include "core/allocator.h"
#include "core/checkpoint.h"
#include "core/config.h"
#include "core/files.h"
#include "check_determinism_checks.h"
#include "determinism_record.h"
#include "kernels/cuda/device_runtime.h"
#include "models/lm_builder.h"
#include "train.h"
#include "data/token_streams.h"

namespace bg::cli {
namespace {

using Row = DeterminismRow;

std::string run_folder(const std::string& out, int64_t r) { return out + "/run" + std::to_string(r); }

// The first element where two float vectors differ bitwise (-1: none).
int64_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return int64_t(i);
  return -1;
}

std::vector<float> host_floats(const Tensor& t) {
  return t.detach().to(DType::f32).to(Device::cpu()).contiguous().to_vector<float>();
}

std::string element_text(const std::vector<float>& a, const std::vector<float>& b, int64_t i) {
  if (a.size() != b.size()) return str_cat("sizes ", a.size(), " and ", b.size());
  char buf[96];
  std::snprintf(buf, sizeof buf, "element %lld: %.9g vs %.9g", (long long)i, a[size_t(i)],
                b[size_t(i)]);
  return buf;
}

// Runs 2..N against run 1, dataset by dataset.
Row compare_runs(const std::vector<std::string>& paths, int64_t steps) {
  const CheckpointReader first(paths[0]);
  const std::vector<std::string> names = first.datasets();
  for (size_t r = 1; r < paths.size(); ++r) {
    const CheckpointReader other(paths[r]);
    if (other.datasets() != names)
      return {"run to run", "DIFFER", str_cat("run ", r + 1, " holds other datasets")};
    for (const std::string& name : names) {
      const std::vector<uint8_t> a = first.raw_bytes(name), b = other.raw_bytes(name);
      if (a == b) continue;
      size_t at = 0;
      while (at < std::min(a.size(), b.size()) && a[at] == b[at]) ++at;
      return {"run to run", "DIFFER",
              str_cat("run ", r + 1, " vs run 1: dataset '", name, "' differs first at byte ", at,
                      " of ", a.size())};
    }
  }
  return {"run to run", "equal",
          str_cat(paths.size(), " runs x ", steps, " steps: all ", names.size(),
                  " checkpoint datasets bitwise equal")};
}

struct SequenceResult {
  // The probe window's head outputs (logits, or a BIDE head's W and r) and its dx.
  std::vector<float> outputs, dx;
};

// The probe window at row `at` of a batch of `n` random windows (the probe's tokens fixed): its
// head outputs and d(sum of the batch's target losses)/d(its embeddings), through the model's
// own probe (models/language_model.h), whatever the model and its head.
SequenceResult probe_in_batch(const LanguageModel& model, const std::vector<int64_t>& probe,
                              int64_t n, int64_t at, int64_t vocab, Device device) {
  const int64_t t = int64_t(probe.size());
  Generator fill(uint64_t(1000 + n));
  const std::vector<double> u = rand({n * (t + 1)}, fill, 0, 1, DType::f64).to_vector<double>();
  std::vector<int64_t> ids(size_t(n * t)), targets(size_t(n * t));
  for (int64_t i = 0; i < n * t; ++i) {
    ids[size_t(i)] = int64_t(u[size_t(i)] * double(vocab)) % vocab;
    targets[size_t(i)] = (ids[size_t(i)] * 7 + 3) % vocab;
  }
  for (int64_t j = 0; j < t; ++j) {
    ids[size_t(at * t + j)] = probe[size_t(j)];
    targets[size_t(at * t + j)] = (probe[size_t(j)] * 7 + 3) % vocab;
  }
  const DeterminismProbe p =
      model.probe(from_vector(ids, {n, t}, device), from_vector(targets, {n, t}, device));
  const int64_t rows = p.outputs.size(0) / n;  // targets a window: T (GPT) or 1 (char MLP)
  return {host_floats(p.outputs.slice(0, at * rows, (at + 1) * rows)),
          host_floats(p.dx.slice(0, at, at + 1))};
}

Row check_batch_invariance(const LanguageModel& model, const std::vector<int64_t>& probe,
                           int64_t vocab, Device device, int64_t big) {
  const SequenceResult alone = probe_in_batch(model, probe, 1, 0, vocab, device);
  int cases = 0;
  for (int64_t n : {int64_t(7), big})
    for (int64_t at : {int64_t(0), n / 2, n - 1}) {
      const SequenceResult in = probe_in_batch(model, probe, n, at, vocab, device);
      for (int part = 0; part < 2; ++part) {
        const std::vector<float>& a = part ? alone.dx : alone.outputs;
        const std::vector<float>& b = part ? in.dx : in.outputs;
        const int64_t i = first_difference(a, b);
        if (i >= 0)
          return {"batch invariance", "DIFFER",
                  str_cat(part ? "dx" : "head outputs", " of the sequence alone vs row ", at,
                          " of a batch of ", n, ": ", element_text(a, b, i))};
      }
      ++cases;
    }
  return {"batch invariance", "equal",
          str_cat("head outputs and dx of a sequence alone = inside batches of 7 and ", big,
                  " at first, middle, last (", cases, " placements)")};
}

Row check_sampler(const LanguageModel& model, const std::vector<int64_t>& probe, int64_t vocab,
                  Device device, int64_t big) {
  const int64_t t = int64_t(probe.size()), at = big * 37 / 64;
  const Tensor sampled = model.sampler_outputs(from_vector(probe, {1, t}, device));
  if (!sampled.defined())
    return {"sampler = trainer", "skipped",
            str_cat(model.type(), ": sampling runs the training forward on each window")};
  const SequenceResult trained = probe_in_batch(model, probe, big, at, vocab, device);
  const std::vector<float> got = host_floats(sampled);
  const int64_t d = int64_t(trained.outputs.size()) / t;
  for (int64_t pos = 0; pos < t; ++pos) {
    const std::vector<float> row(got.begin() + pos * d, got.begin() + (pos + 1) * d);
    const std::vector<float> want(trained.outputs.begin() + pos * d,
                                  trained.outputs.begin() + (pos + 1) * d);
    const int64_t i = first_difference(row, want);
    if (i >= 0)
      return {"sampler = trainer", "DIFFER",
              str_cat("KV-cached head outputs at position ", pos, " vs the training forward (row ",
                      at, " of ", big, "): ", element_text(row, want, i))};
  }
  return {"sampler = trainer", "equal",
          str_cat("KV-cached head outputs = training forward in a batch of ", big, " at all ", t,
                  " positions")};
}

// Where this command's deterministic GEMM algorithms came from: all from the built-in table
// means the same bits on every sm_90 GPU; a heuristic choice may differ on another GPU model.
Row gemm_sources_row(const cuda::GemmAlgoSources& before) {
  const cuda::GemmAlgoSources now = cuda::batch_invariant_algo_sources();
  const int64_t table = now.table - before.table, nearest = now.nearest_row - before.nearest_row,
                heuristic = now.heuristic - before.heuristic;
  if (heuristic > 0)
    return {"GPU-model free", "no",
            str_cat(heuristic, " of ", table + nearest + heuristic,
                    " GEMM algorithms chosen by cuBLASLt's heuristic: their bits may differ on "
                    "another GPU model")};
  return {"GPU-model free", "yes",
          str_cat("all ", table + nearest, " GEMM algorithms from the built-in table (", nearest,
                  " from a nearest row): the same bits on every sm_90 GPU")};
}

// The user's config as given, before the mode is set: a run it takes out of the mode, or fewer
// steps than --steps, would make the report describe something that did not run.
void check_user_config(const Args& args, int64_t steps) {
  ConfigReader user(args.positional[0], args.overrides);
  const TrainRun as_given = read_train_config(user);
  BG_CHECK(!user.has("train.deterministic") || as_given.mode.deterministic, "check-determinism",
           "the config sets train.deterministic: false; this command checks the deterministic "
           "mode (drop the setting, or set it true)");
  const int64_t config_steps = as_given.trainer.steps;
  BG_CHECK(steps <= config_steps, "check-determinism", "--steps ", steps,
           " is past the config's train.steps = ", config_steps, " (use --steps ", config_steps,
           " or fewer)");
}

// The model's own checks (batch invariance, sampler = trainer) on run 1's checkpoint, each with
// a batch of 64 or, where that does not fit, of the run's own batch size (at least 8).
void model_checks(const std::string& checkpoint, Device device, int64_t run_batch,
                  std::vector<Row>* rows) {
  const auto ck = load_language_model(checkpoint, device);
  LanguageModel& model = *ck->model;
  model.train(false);  // dropout off: a sequence's numbers are then its own
  const int64_t t = model.context(), vocab = ck->tokenizer->vocab_size();
  Generator gen(4242);
  const std::vector<double> u = rand({t}, gen, 0, 1, DType::f64).to_vector<double>();
  std::vector<int64_t> probe(static_cast<size_t>(t));
  for (int64_t j = 0; j < t; ++j) probe[size_t(j)] = int64_t(u[size_t(j)] * double(vocab)) % vocab;
  const int64_t fallback = std::max<int64_t>(8, std::min<int64_t>(64, run_batch));
  auto with_big_batch = [&](auto check) {
    try {
      return check(int64_t(64));
    } catch (const OutOfMemory&) {
      if (fallback == 64) throw;
      if (device.is_cuda()) cuda_empty_cache();
      Row row = check(fallback);
      row.detail += " (a batch of 64 does not fit this GPU)";
      return row;
    }
  };
  rows->push_back(with_big_batch(
      [&](int64_t big) { return check_batch_invariance(model, probe, vocab, device, big); }));
  rows->push_back(
      with_big_batch([&](int64_t big) { return check_sampler(model, probe, vocab, device, big); }));
}

// Prints the table; 0 when nothing differs.
int report(const std::string& config, Device device, const std::string& mode_text,
           const std::vector<Row>& rows, const std::string& record) {
  bool ok = true;
  std::printf("\ncheck-determinism %s on %s (compute %s)\n", config.c_str(), device.str().c_str(),
              mode_text.c_str());
  std::printf("%-18s %-7s %s\n", "check", "result", "detail");
  for (const Row& row : rows) {
    std::printf("%-18s %-7s %s\n", row.check.c_str(), row.result.c_str(), row.detail.c_str());
    ok = ok && row.result != "DIFFER";
  }
  if (!record.empty()) std::printf("recorded the checkpoint's digests in %s\n", record.c_str());
  return ok ? 0 : 1;
}

}  // namespace

int run_check_determinism(const Args& args) {
  args.allow_only({"runs", "steps", "out", "record", "compare"});
  BG_CHECK(args.positional.size() == 1, "check-determinism",
           "usage: bitgrad check-determinism CONFIG [--runs N] [--steps S] [--out DIR] "
           "[--record FILE] [--compare FILE] [--set key=value ...]");
  const std::string record = args.option("record", ""), compare = args.option("compare", "");
  DeterminismRecord recorded;
  if (!compare.empty()) recorded = read_determinism_record(compare);
  const int64_t runs = parse_integer(args.option("runs", "3"), "--runs", 2, 100);
  const int64_t steps = parse_integer(args.option("steps", "20"), "--steps", 1, 1 << 30);
  const std::string out = args.option("out", "runs/check_determinism");
  check_user_config(args, steps);
  // The config as its runs read it (in the mode): the config's first S steps (its own schedule,
  // warmup included), stopping there with last.h5 as a time-boxed run does.
  std::vector<std::string> sets = args.overrides;
  for (const std::string& s : std::vector<std::string>{
           "train.deterministic=true", "train.eval_interval=" + std::to_string(steps),
           "run.resume=false", "run.stop_after_steps=" + std::to_string(steps)})
    sets.push_back(s);
  const ConfiguredRun checked = configured_run(args.positional[0], sets);
  const Device device = parse_device(checked.run.device);
  check_output_dir(out, "check-determinism");
  const std::vector<std::string> settings = determinism_settings(checked.context.effective_yaml);
  if (!compare.empty()) {
    const ConfigReader given(args.positional[0], sets);  // which keys the file and --set name
    check_same_settings(
        recorded, settings, [&](const std::string& key) { return given.has(key); },
        [](const std::string& key) { return config_key_meanings().count(key) > 0; });
  }
  if (args.has("record")) {
    // Read later: the run's data, and each run's outputs (the comparison opens them).
    std::vector<std::string> later = data_inputs(checked.run.data);
    for (int64_t r = 1; r <= runs; ++r)
      for (const char* name : kRunOutputs) later.push_back(run_folder(out, r) + "/" + name);
    check_output_file(record, "check-determinism", "--record", later);
  }
  const cuda::GemmAlgoSources sources_before =
      device.is_cuda() ? cuda::batch_invariant_algo_sources() : cuda::GemmAlgoSources{};
  std::vector<std::string> paths;
  for (int64_t r = 1; r <= runs; ++r) {
    std::printf("== check-determinism: run %lld of %lld ==\n", (long long)r, (long long)runs);
    std::vector<std::string> run_sets = sets;
    run_sets.push_back("run.out_dir=" + run_folder(out, r));
    const ConfiguredRun one = configured_run(args.positional[0], run_sets);
    if (train_run(one.run, one.context) == 130) {  // Ctrl-C: saved, and stopped
      std::printf("check-determinism: stopped by a signal during run %lld; nothing compared\n",
                  (long long)r);
      return 130;
    }
    paths.push_back(run_folder(out, r) + "/last.h5");
  }
  std::fflush(stdout);
  // The runs' cached device memory goes back to the driver: the checks below build batches of
  // 64 whole sequences (12.6 GiB of logits for GPT-2 124M), which must not meet a full cache.
  if (device.is_cuda()) cuda_empty_cache();
  std::vector<Row> rows = {compare_runs(paths, steps)};
  const std::string mode_text = checked.run.mode.on(device).str();
  if (!compare.empty()) rows.push_back(compare_determinism_record(recorded, paths[0]));
  if (checked.run.model.type == ModelType::forecaster)
    forecaster_checks(paths[0], device, &rows);
  else
    model_checks(paths[0], device, checked.run.batch, &rows);
  if (device.is_cuda()) rows.push_back(gemm_sources_row(sources_before));
  // A record only of a check that passed: a record of runs that differ would make the next
  // machine's comparison against it meaningless.
  const bool passed = std::none_of(rows.begin(), rows.end(),
                                   [](const Row& row) { return row.result == "DIFFER"; });
  if (!record.empty() && passed)
    write_determinism_record(
        record, paths[0], args.positional[0], steps,
        device.is_cuda() ? cuda::describe(cuda::device_info(device.index)) : "cpu", mode_text,
        settings);
  if (!record.empty() && !passed)
    std::printf("check-determinism: no record written to %s (a check differs)\n", record.c_str());
  return report(args.positional[0], device, mode_text, rows, passed ? record : "");
}

}  // namespace bg::cli
