// eval.cpp: `bitgrad eval CKPT`: mean cross-entropy (nats per target), bits per byte and
// perplexity of a language model on every target of a validation set (models/lm_eval.h: the
// windows; a model predicting P tokens jointly is scored per target of P tokens, its bits per
// byte over the P bytes each holds). --per-token FILE writes each scored position's target and
// its nats as CSV, for breakdowns (by the target's frequency, say) outside bitgrad.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli.h"
#include "core/error.h"
#include "core/files.h"
#include "data/token_streams.h"
#include "data/token_shards.h"
#include "models/forecast/forecast_run.h"
#include "models/lm_builder.h"
#include "models/lm_eval.h"

namespace bg::cli {

int run_eval(const Args& args) {
  // A forecaster is scored on its series' test windows (forecast.cpp).
  // Sample paths from elsewhere (a .csv) are scored the same way.
  if (args.positional.size() == 1 && (is_paths_file(args.positional[0]) ||
                                      checkpoint_model_type(args.positional[0]) == kForecasterType))
    return run_forecast_eval(args);
  args.allow_only({"data", "batch-size", "device", "per-token"});
  BG_CHECK(args.positional.size() == 1, "eval",
           "usage: bitgrad eval CKPT [--data FILE(.txt|.bin)] [--batch-size B] [--device D] "
           "[--per-token FILE]");
  const std::string& path = args.positional[0];
  const bool write_rows = args.has("per-token");
  const std::string per_token = args.option("per-token", "");
  const Device device = parse_device(args.option("device", "auto"));
  const auto ck = load_language_model(path, device);
  const int64_t batch = parse_integer(args.option("batch-size", "8"), "--batch-size", 1, 1 << 16);
  std::string source = args.option("data", "");
  std::vector<int32_t> tokens;
  if (!source.empty()) {
    tokens = read_tokens(source, *ck->tokenizer);
  } else {  // the run's own validation data
    BG_CHECK(!ck->val_data.empty(), "eval", path, " names no validation data: use --data");
    tokens = validation_tokens(ck->val_data, ck->val_fraction, *ck->tokenizer, &source);
  }
  // Every input is read by now (the checkpoint, its recorded data or --data): none may be the output.
  if (write_rows) check_output_file(per_token, "eval", "--per-token");
  std::ostringstream rows_csv;
  rows_csv.precision(9);  // %.9g: every f32 loss read back exactly
  rows_csv << "position,target,nats\n";
  const StreamScore s =
      score_stream(*ck->model, *ck->tokenizer, tokens, batch, device,
                   write_rows ? std::function<void(int64_t, int64_t, double)>(
                                    [&](int64_t pos, int64_t target, double nats) {
                                      rows_csv << pos << ',' << target << ',' << nats << '\n';
                                    })
                              : nullptr);
  const bool single = ck->model->tokens_per_target() == 1;
  const double loss = s.nats / double(s.targets);
  std::printf(
      "%s: step %lld | %s: %lld %s, %lld bytes | loss %.4f nats/%s | %.4f bits/byte "
      "| perplexity %.3f",
      path.c_str(), (long long)ck->step, source.c_str(), (long long)s.targets,
      single ? "tokens" : "targets", (long long)s.bytes, loss, single ? "token" : "target",
      s.nats / std::log(2.0) / double(std::max<int64_t>(s.bytes, 1)), std::exp(loss));
  if (s.has_outside_mass)
    std::printf(" | unrestricted, the head would put %.3g of its mass outside the vocabulary",
                s.outside_mass / double(s.targets));
  std::printf("\n");
  if (write_rows) write_file_atomic(per_token, rows_csv.str(), "eval");
  return 0;
}

}  // namespace bg::cli
