#include "lm_builder.h"

#include "core/checkpoint.h"
#include "models/gpt/gpt_weights.h"
#include "models/lm_checkpoint.h"

namespace bg {
namespace {

// The GPT's settings that depend on the data, resolved and checked against the tokenizer.
GPTConfig resolve_gpt(GPTConfig g, const Tokenizer& tok) {
  const int64_t vocab = tok.vocab_size();
  if (g.vocab_size == 0) g.vocab_size = vocab;
  BG_CHECK(g.vocab_size >= vocab, "config", "model.vocab_size: ", g.vocab_size,
           " is smaller than the ", tok.kind(), " tokenizer's ", vocab);
  // Padding is for the GEMMs' tile sizes (GPT-2's 50257 -> 50304): every padded row costs
  // embedding, head and optimizer work, and no token ever uses it.
  const int64_t pad_limit = (vocab + kMaxVocabPadding - 1) / kMaxVocabPadding * kMaxVocabPadding;
  BG_CHECK(g.vocab_size <= pad_limit, "config", "model.vocab_size: ", g.vocab_size, " pads the ",
           tok.kind(), " tokenizer's ", vocab, " ids with ", g.vocab_size - vocab,
           " rows no token uses (pad to at most ", pad_limit, ", the next multiple of ",
           kMaxVocabPadding, ")");
  if (g.head != HeadKind::bide) return g;
  // The BIDE head's support: exactly the tokenizer's targets (a padded vocabulary's extra ids
  // are never targets).
  GPTConfig unpadded = g;
  unpadded.vocab_size = vocab;
  g.bide.support = target_vocabulary(unpadded);
  const int64_t support = g.bide.support;
  const int fewest = bits_for_vocabulary(support);
  BG_CHECK(g.bide.bits == 0 || (int64_t(1) << g.bide.bits) >= support, "config",
           "head.bide.bits: ", g.bide.bits, " bits hold ", int64_t(1) << g.bide.bits, " ids, the ",
           tok.kind(), " targets number ", support, " (use ", fewest, " or more)");
  BG_CHECK(g.bide.bits <= fewest + kMaxBideSpareBits, "config", "head.bide.bits: ", g.bide.bits,
           " bits make ", int64_t(1) << g.bide.bits, " patterns for the ", tok.kind(),
           " tokenizer's ", support,
           " targets; the unrestricted normaliser and the GPU pass cost 2^bits, not the targets "
           "(use ",
           fewest, " to ", fewest + kMaxBideSpareBits, ", or 0)");
  BG_CHECK(g.bide.softmax_ids < support, "config", "head.bide.softmax_ids: ", g.bide.softmax_ids,
           " leaves the BIDE none of the ", tok.kind(), " tokenizer's ", support,
           " ids (use at most ", support - 1, ")");
  BG_CHECK(g.bide.code == BideTokenCode::id || g.predict_tokens == 1, "config",
           "head.bide.code: ", enum_name(g.bide.code),
           " ranks single tokens; byte_pair targets take id");
  resolve_bide_head(g);
  return g;
}

}  // namespace

std::unique_ptr<LanguageModel> build_language_model(const ModelSpec& spec, const Tokenizer& tok,
                                                    const std::vector<int32_t>& train_tokens,
                                                    const ComputeMode& mode, Device device,
                                                    Generator& init) {
  std::unique_ptr<LanguageModel> model;
  switch (spec.type) {
    case ModelType::gpt: {
      GPTConfig g = resolve_gpt(spec.gpt, tok);
      g.fused_attention = choose_fused_attention(spec.attention, mode, device, g.n_embd / g.n_head);
      auto gpt = std::make_unique<GPT>(g, init);
      // The drawn values replaced: init's stream stays the same.
      if (!spec.init_from.empty()) load_pretrained_into(*gpt, spec.init_from);
      // A BIDE head's token code other than the id: ranked by the training tokens (resume loads
      // the saved one, and compares).
      if (g.head == HeadKind::bide && g.bide.code != BideTokenCode::id)
        gpt->bide_head()->set_code(token_code(gpt->config().bide, train_tokens));
      model = std::move(gpt);
      break;
    }
    case ModelType::char_mlp: {
      CharMLPConfig m = spec.mlp;
      m.vocab_size = tok.vocab_size();
      model = std::make_unique<CharMLP>(m, init);
      break;
    }
    case ModelType::forecaster:  // not a language model: models/forecast/forecast_run.h builds it
      fail("config", "model.type: forecaster reads series (data.format: series), not text");
  }
  model->set_compute_mode(mode);
  return model;
}

std::unique_ptr<LoadedModel> load_language_model(const std::string& path, Device device) {
  ModelType type = ModelType::gpt;
  const std::string name = checkpoint_model_type(path);
  BG_CHECK(parse_enum(name, &type), "checkpoint", path, ": attribute model_type is '", name,
           "', expected ", enum_names_text<ModelType>());
  auto out = std::make_unique<LoadedModel>();
  auto adopt = [&](auto loaded) {  // the common part as it is, the model as a LanguageModel
    static_cast<LoadedRun&>(*out) = std::move(static_cast<LoadedRun&>(*loaded));
    out->model = std::move(loaded->model);
  };
  switch (type) {
    case ModelType::gpt:
      adopt(load_gpt_checkpoint(path, device));
      break;
    case ModelType::char_mlp:
      adopt(load_char_mlp_checkpoint(path, device));
      break;
    case ModelType::forecaster:
      fail("checkpoint", path, " holds a forecaster of series, not a language model (use "
           "bitgrad forecast, or bitgrad eval)");
  }
  return out;
}

}  // namespace bg
