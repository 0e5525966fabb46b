// config.h: YAML configs read into typed structs. Every value is read through ConfigReader
// with its type, default and allowed range; finish() then rejects any key nobody read. Errors
// name the file, line and column (or the --set flag) and the key path:
//   [config] configs/x.yaml:7:9: optimizer.lr: expected a number, got 'fast'
// `--set a.b=value` overrides are applied to the tree before reading. Nothing falls back to a
// default silently: an empty or null value, a scalar or list where a section belongs, and a
// duplicate key are errors; a key that another setting makes irrelevant is named as such.
// The file is checked before it is parsed (a regular file of at most 1 MiB), and the parsed
// tree is bounded (depth, number of values), so a pathological file fails fast.
#pragma once
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/enum_names.h"

namespace bg {

// One key as the validator reads it: what `bitgrad config` prints and docs/config.md lists.
struct ConfigKeySpec {
  std::string key;    // list elements as "distributions[].kind"
  std::string type;   // number, integer, boolean, string, choice, list of N numbers
  std::string def;    // the default as written in YAML; empty when required
  std::string range;  // "[0, 10]", ">= 1", "tanh | erf"; empty when any value goes
  bool required = false;
};

// A range as messages and `bitgrad config` print it: "[lo, hi]", or ">= lo" when hi is a
// stand-in for no bound (2^40 and above).
std::string range_text(double lo, double hi);

// `text` as a YAML scalar that reads back as exactly `text` (quoted where a colon, a '#', edge
// spaces or the like would change it): for YAML written by hand (import's config record).
std::string yaml_scalar(const std::string& text);

// A config's YAML text as "key.path" -> its value in YAML's flow form ("[0.9, 0.95]"), for
// comparing two runs' configs setting by setting (a resume against its checkpoint's record,
// check-determinism against another machine's), in the text's order.
std::vector<std::pair<std::string, std::string>> flat_settings(const std::string& yaml_text);

class ConfigReader {
 public:
  // Loads `path` (empty: an empty config) and applies "key.path=value" overrides.
  ConfigReader(const std::string& path, const std::vector<std::string>& overrides);

  bool has(const std::string& key) const;
  // Whether `key` was given by a --set (rather than by the file or not at all).
  bool from_command_line(const std::string& key) const { return overridden_.count(key) > 0; }
  double number(const std::string& key, double def, double lo, double hi);
  double number(const std::string& key, double lo, double hi);  // required
  int64_t integer(const std::string& key, int64_t def, int64_t lo, int64_t hi);
  bool boolean(const std::string& key, bool def);
  std::string string(const std::string& key, const std::string& def);
  std::string string(const std::string& key);  // required
  std::string choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& options);
  // A choice among an enum's names (kernels/enum_names.h), returned as the value.
  template <typename E>
  E choice(const std::string& key, E def) {
    E v = def;
    parse_enum(choice(key, enum_name(def), enum_names<E>()), &v);
    return v;
  }
  std::vector<double> numbers(const std::string& key, const std::vector<double>& def, size_t count);
  size_t list_size(const std::string& key);    // length of a sequence (0 when absent)
  bool is_list(const std::string& key) const;  // present and a sequence

  // `key` (and anything under it) does not apply in this configuration: finish() reports it,
  // when present, as "not used when <because>" rather than as an unknown key. Of several
  // reasons for one key, the first `own` one (the key's own condition, not an enclosing one's).
  void not_used(const std::string& key, const std::string& because, bool own = true);

  // Throws on the first key in the file that no read asked for, then on a missing required key
  // (required reads return a default until then, so a misspelt key is reported as such).
  void finish() const;
  // The config as used: every key read, with defaults filled in.
  std::string effective_yaml() const;
  const std::string& path() const { return path_; }
  // A range that follows another key ("[0, train.steps]"), for the schema to print.
  void range_is(const std::string& key, const std::string& text);
  // A default that follows another key ("the kind"), for the schema to print.
  void default_is(const std::string& key, const std::string& text);
  // Every key read so far, in the order first read, with its type, default and range.
  const std::vector<ConfigKeySpec>& schema() const { return schema_; }

  [[noreturn]] void fail_at(const std::string& key, const std::string& msg) const;

 private:
  YAML::Node find(const std::string& key) const;
  YAML::Node lookup(const YAML::Node& node, const std::vector<std::string>& parts, size_t i,
                    const std::string& key) const;
  void check_tree(const YAML::Node& node, const std::string& origin) const;
  std::string where(const YAML::Node& node, const std::string& key) const;
  void mark_used(const std::string& key);
  void record(const std::string& key, const YAML::Node& value);
  void finish_missing() const;
  void spec(const std::string& key, const std::string& type, const std::string& def,
            const std::string& range, bool required = false);
  std::string suggestion(const std::string& unknown) const;

  std::string path_;
  YAML::Node root_, effective_;
  std::set<std::string> used_;
  std::map<std::string, std::string> overridden_;   // key -> the whole --set text
  std::map<std::string, std::string> made_by_set_;  // a section only a --set made -> its text
  std::set<std::string> containers_;
  std::vector<std::string> missing_;  // lists whose elements are read one by one
  std::vector<std::pair<std::string, std::string>> not_used_;  // key, because
  std::set<std::string> own_reason_;  // keys with a reason of their own in not_used_
  std::vector<ConfigKeySpec> schema_;
};

// Limits on a config file: bitgrad's configs are a few KiB and four levels deep.
inline constexpr int64_t kMaxConfigBytes = 1 << 20;
inline constexpr int kMaxConfigDepth = 32;
inline constexpr int64_t kMaxConfigValues = 100000;

// run.name and run.out_dir: the folder a run writes, runs/<run.name> unless run.out_dir names
// another. A name is one folder name (not ".", "..", nor a path); a --set run.name on a config
// that pins run.out_dir is refused, since the output would not move.
std::string read_out_dir(ConfigReader& r, const std::string& default_name);

// The two keys' meanings, as every command's list declares them (core/settings.h's custom).
inline constexpr const char* kRunNameMeaning =
    "run name; outputs go to runs/<name> unless run.out_dir is set";
inline constexpr const char* kRunOutDirMeaning =
    "output folder (checkpoints, metrics.csv, config.yaml, plots)";

}  // namespace bg
