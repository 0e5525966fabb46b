#include "token_streams.h"

#include <cstdio>

#include "core/error.h"
#include "data/text.h"
#include "data/token_shards.h"

namespace bg {

TokenStreams load_token_streams(const DataSpec& spec, int64_t context) {
  TokenStreams out;
  if (spec.tokenizer == TokenizerKind::gpt2) check_data_path(spec.gpt2_dir, "data.gpt2_dir");
  if (spec.train_bin.empty()) {
    check_data_path(spec.path, "data.path");
    const std::string text = read_text_file(spec.path);
    out.tokenizer = make_tokenizer(spec.tokenizer, text, spec.gpt2_dir);
    const size_t cut = split_point(text, spec.val_fraction);
    out.train = out.tokenizer->encode(text.substr(0, cut));
    out.val = out.tokenizer->encode(text.substr(cut));
    out.train_source = out.val_source = spec.path;
  } else {
    out.tokenizer = make_tokenizer(spec.tokenizer, "", spec.gpt2_dir);
    out.train = read_tokens(spec.train_bin, *out.tokenizer);
    out.val = read_tokens(spec.val_bin, *out.tokenizer);
    out.train_source = spec.train_bin;
    out.val_source = spec.val_bin;
  }
  BG_CHECK(int64_t(out.val.size()) > context, "train", out.val_source, ": validation split has ",
           out.val.size(), " tokens, fewer than context + 1 = ", context + 1);
  BG_CHECK(int64_t(out.train.size()) > context, "train", out.train_source,
           ": training split has ", out.train.size(), " tokens, fewer than context + 1 = ",
           context + 1);
  return out;
}

std::vector<int32_t> validation_tokens(const std::string& source, double val_fraction,
                                       const Tokenizer& tok, std::string* what) {
  *what = source;
  if (is_shard_path(source)) return read_tokens(source, tok);
  const std::string text = read_text_file(source);
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, "%.2f", val_fraction);
  *what += std::string(" (last ") + fraction + ")";
  return tok.encode(text.substr(split_point(text, val_fraction)));
}

}  // namespace bg
