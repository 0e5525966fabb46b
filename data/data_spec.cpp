#include "data_spec.h"
#include "data/gpt2_bpe.h"

#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "data/text.h"
#include "data/token_shards.h"

namespace bg {

void check_data_path(const std::string& path, const std::string& what) {
  // Other missing paths are reported by their reader, with the OS's reason.
  std::error_code ec;
  if (path.rfind("datasets/", 0) != 0 || std::filesystem::exists(path, ec)) return;
  fail("data", what, ": ", path,
       " does not exist (scripts/get_data.sh fetches the data the shipped configs read)");
}

const Settings<DataSpec>& data_settings() {
  static const Settings<DataSpec> s = [] {
    Settings<DataSpec> s;
    s.choice("data.format", [](auto& d) -> auto& { return d.format; },
             "text (a text file or token shards: language models) or series (a CSV "
             "unique_id,ds,y or one value a line: model.type forecaster)");
    const auto format_is = [](const DataSpec& d) {
      return "data.format is " + std::string(enum_name(d.format));
    };
    s.when([](const DataSpec& d) { return d.format == DataFormat::series; }, format_is);
    s.integer("data.horizon", [](auto& d) -> auto& { return d.horizon; }, 1, 1 << 16,
              "series: forecast steps; each series' last horizon points test, the horizon "
              "before them validate",
              kRecorded | kKeptOnResume);
    s.integer("data.season", [](auto& d) -> auto& { return d.season; }, 1, 1 << 16,
              "series: the seasonal period (12 for monthly data): the seasonal-naive baseline "
              "and MASE's scale",
              kRecorded);
    // Text (data.path, split by data.val_fraction) or llm.c shards (data.train_bin/val_bin).
    s.when([](const DataSpec& d) { return d.format == DataFormat::text; }, format_is);
    s.string("data.train_bin", [](auto& d) -> auto& { return d.train_bin; },
             "llm.c token shard to train on (bitgrad prepare), instead of data.path");
    s.when([](const DataSpec& d) { return d.train_bin.empty(); },
           [](const DataSpec&) {
             return std::string("data.train_bin is set (token shards replace the text file)");
           });
    s.string("data.path", [](auto& d) -> auto& { return d.path; },
             "text file, split at data.val_fraction of its characters (nanoGPT's split); or the "
             "series file",
             kRequired);
    s.when([](const DataSpec& d) { return d.format == DataFormat::text && d.train_bin.empty(); },
           [](const DataSpec& d) {
             return d.format == DataFormat::series
                        ? std::string("data.format is series (data.horizon splits it)")
                        : std::string("data.train_bin is set (token shards replace the text file)");
           });
    s.number("data.val_fraction", [](auto& d) -> auto& { return d.val_fraction; }, 0.0, 0.5,
             "last fraction of the text's characters held out for validation",
             kRecorded | kKeptOnResume | kOptional)
        .saved_as("val_fraction");
    s.when([](const DataSpec& d) { return !d.train_bin.empty(); },
           [](const DataSpec&) {
             return std::string("data.train_bin is not set (data.path is split instead)");
           });
    s.string("data.val_bin", [](auto& d) -> auto& { return d.val_bin; },
             "llm.c token shard to validate on, with data.train_bin", kRequired);
    s.when([](const DataSpec& d) { return d.format == DataFormat::text; }, format_is);
    // byte_pair: bytes in, the next two bytes predicted jointly (a BIDE head over 16 bits).
    s.choice("data.tokenizer", [](auto& d) -> auto& { return d.tokenizer; },
             "char (the text's byte set), byte (256 ids), byte_pair (bytes in, the next two bytes "
             "predicted jointly by a BIDE head over 16 bits) or gpt2 (GPT-2 BPE)");
    s.when([](const DataSpec& d) {
             return d.format == DataFormat::text && d.tokenizer == TokenizerKind::gpt2;
           },
           [format_is](const DataSpec& d) {
             return d.format != DataFormat::text
                        ? format_is(d)
                        : "data.tokenizer is " + std::string(enum_name(d.tokenizer));
           });
    s.string("data.gpt2_dir", [](auto& d) -> auto& { return d.gpt2_dir; },
             "folder with GPT-2's encoder.json and vocab.bpe");
    return s;
  }();
  return s;
}

SettingProblem data_spec_problem(const DataSpec& spec) {
  if (!spec.train_bin.empty() && spec.tokenizer == TokenizerKind::characters)
    return {"data.tokenizer", "token shards need a fixed vocabulary: byte, byte_pair or gpt2"};
  return {};
}

std::vector<std::string> data_inputs(const DataSpec& spec) {
  std::vector<std::string> inputs = {spec.path, spec.train_bin, spec.val_bin};
  if (spec.tokenizer == TokenizerKind::gpt2)
    for (const bool merges : {false, true}) inputs.push_back(gpt2_vocab_file(spec.gpt2_dir, merges));
  return inputs;
}

}  // namespace bg
