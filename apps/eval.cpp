// eval.cpp: `bitgrad eval CKPT`: mean cross-entropy (nats per token) and perplexity of a GPT on
// every token of a validation set, in non-overlapping block_size windows (each token but the
// first predicted once, from up to block_size tokens of context). A model predicting P tokens
// jointly (byte pairs) is scored on each position's next P tokens, nats per target; its bits per
// byte divide by the P bytes each target holds (the mean of P interleaved chain-rule codes of
// the text, each a proper code length). --per-token FILE writes each scored position's target
// and its nats as CSV, for breakdowns (by the target's frequency, say) outside bitgrad.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli.h"
#include "core/error.h"
#include "core/files.h"
#include "data/text.h"
#include "data/token_shards.h"
#include "models/lm_checkpoint.h"

namespace bg::cli {

int run_eval(const Args& args) {
  args.allow_only({"data", "batch-size", "device", "per-token"});
  BG_CHECK(args.positional.size() == 1, "eval",
           "usage: bitgrad eval CKPT [--data FILE(.txt|.bin)] [--batch-size B] [--device D] "
           "[--per-token FILE]");
  const bool write_rows = args.has("per-token");
  const std::string per_token = args.option("per-token", "");
  const Device device = parse_device(args.option("device", "auto"));
  const auto ck = load_gpt_checkpoint(args.positional[0], device);
  const int64_t batch = parse_integer(args.option("batch-size", "8"), "--batch-size", 1, 1 << 16);
  std::string source = args.option("data", "");
  std::vector<int32_t> tokens;
  if (!source.empty()) {
    tokens = read_tokens(source, *ck->tokenizer);
  } else {  // the run's own validation data
    source = ck->val_data;
    BG_CHECK(!source.empty(), "eval", args.positional[0], " names no validation data: use --data");
    if (is_shard_path(source)) {
      tokens = read_tokens(source, *ck->tokenizer);
    } else {
      const std::string text = read_text_file(source);
      tokens = ck->tokenizer->encode(text.substr(split_point(text, ck->val_fraction)));
      source += " (last " + std::to_string(ck->val_fraction).substr(0, 4) + ")";
    }
  }
  // Every input is read by now (the checkpoint, its recorded data or --data): none may be the output.
  if (write_rows) check_output_file(per_token, "eval", "--per-token");
  const GPT& model = *ck->model;
  const GPTConfig& cfg = model.config();
  const int64_t ahead = cfg.predict_tokens;
  // Positions with a whole target: tokens[w] predicts tokens[w + 1 .. w + ahead].
  const int64_t n = int64_t(tokens.size()) - (ahead - 1), block = cfg.block_size;
  BG_CHECK(n >= 2, "eval", source, ": needs at least ", ahead + 1, " tokens, has ", tokens.size());
  // Bits per byte: the loss over the bytes the predicted tokens decode to, so runs of any
  // tokenizer compare (char and byte tokens are one byte each; GPT-2's are several).
  const Tokenizer& tok = *ck->tokenizer;
  std::vector<int64_t> token_bytes(size_t(tok.vocab_size()));
  for (int32_t id = 0; id < int32_t(token_bytes.size()); ++id)
    token_bytes[size_t(id)] = int64_t(tok.decode({id}).size());
  const auto* bide = dynamic_cast<const BideTokenHead*>(&model.head());
  NoGradGuard no_grad;
  Generator unused;
  double total = 0, outside = 0;
  int64_t counted = 0, bytes = 0;
  std::ostringstream rows_csv;
  rows_csv.precision(9);  // %.9g: every f32 loss read back exactly
  if (write_rows) rows_csv << "position,target,nats\n";
  // Windows [w, w + len] predict tokens w+1..w+len; full windows go in batches, the tail alone.
  for (int64_t w = 0; w < n - 1;) {
    const int64_t len = std::min(block, n - 1 - w);
    const int64_t rows = len == block ? std::min(batch, (n - 1 - w) / block) : 1;
    std::vector<int64_t> x(size_t(rows * len)), y(size_t(rows * len));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t t = 0; t < len; ++t) {
        x[size_t(r * len + t)] = tokens[size_t(w + r * len + t)];
        y[size_t(r * len + t)] = joint_target(cfg, &tokens[size_t(w + r * len + t + 1)]);
        for (int64_t j = 0; j < ahead; ++j)
          bytes += token_bytes[size_t(tokens[size_t(w + r * len + t + 1 + j)])];
      }
    const Tensor xt = from_vector(x, {rows, len}, device), yt = from_vector(y, {rows, len}, device);
    const Tensor h =
        model.hidden_from_embeddings(model.embed(xt, unused), unused).reshape({rows * len, -1});
    const Tensor nats = model.head().loss(h, yt.reshape({rows * len}), "none");
    total += sum(nats).item();
    if (write_rows) {
      const std::vector<double> v = nats.to(Device::cpu(), DType::f64).to_vector<double>();
      for (size_t i = 0; i < v.size(); ++i)
        rows_csv << w + int64_t(i) << ',' << y[i] << ',' << v[i] << '\n';
    }
    if (bide) {  // the mass the same head would put outside the vocabulary, unrestricted
      const auto [z_vocab, z_all] = bide->log_normalizers(h);
      // The two normalisers come from separate SICK passes: with no mass outside, rounding can
      // put z_vocab a hair above z_all, which is no mass, not a negative one.
      const Tensor mass = exp(z_vocab - z_all) * -1.0 + 1.0;
      outside += sum(maximum(mass, zeros({}, mass.dtype(), mass.device()))).item();
    }
    counted += rows * len;
    w += rows * len;
  }
  const double loss = total / double(counted);
  std::printf(
      "%s: step %lld | %s: %lld %s, %lld bytes | loss %.4f nats/%s | %.4f bits/byte "
      "| perplexity %.3f",
      args.positional[0].c_str(), (long long)ck->step, source.c_str(), (long long)counted,
      ahead == 1 ? "tokens" : "targets", (long long)bytes, loss, ahead == 1 ? "token" : "target",
      total / std::log(2.0) / double(std::max<int64_t>(bytes, 1)), std::exp(loss));
  if (bide)
    std::printf(" | unrestricted, the head would put %.3g of its mass outside the vocabulary",
                outside / double(counted));
  std::printf("\n");
  if (write_rows) write_file_atomic(per_token, rows_csv.str(), "eval");
  return 0;
}

}  // namespace bg::cli
