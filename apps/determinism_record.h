// determinism_record.h: check-determinism's record of a run, for the same check across machines.
// `--record FILE` writes the SHA-256 of every dataset of a run's checkpoint (and where it ran);
// `--compare FILE` checks another machine's run against it, one line per differing dataset.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace bg::cli {

struct DeterminismRow {
  std::string check, result, detail;
};

// Writes the record of `checkpoint` (trained by `config` for `steps` steps on `device_name` in
// `mode_text`) to `path`.
void write_determinism_record(const std::string& path, const std::string& checkpoint,
                              const std::string& config, int64_t steps,
                              const std::string& device_name, const std::string& mode_text,
                              const std::vector<std::string>& settings);
// The settings that decide a run's bits as "key.path: value" lines (the effective config without
// where the run writes): a record holds them, and a comparison refuses other settings by name.
std::vector<std::string> determinism_settings(const std::string& effective_yaml);
// A record read back: where it was made, and each dataset's digest.
struct DeterminismRecord {
  std::string path, origin;
  std::vector<std::string> settings;  // empty in records made before settings were recorded
  std::map<std::string, std::string> digests;
};
// Refuses a record of other settings, naming the first that differs. A key the record lacks is
// accepted when this run did not set it (`given` says which keys the config or a --set gave):
// a setting newer than the record, at its default, runs as the build before it did.
// A key the record holds and this run lacks is refused as another kind of run when `known` says
// this build reads the key, and as another build's setting when it does not.
void check_same_settings(const DeterminismRecord& record, const std::vector<std::string>& here,
                         const std::function<bool(const std::string&)>& given,
                         const std::function<bool(const std::string&)>& known);
// Reads a record, refusing a file that is not one (before any run starts).
DeterminismRecord read_determinism_record(const std::string& path);
// Compares `checkpoint` with a record: one row, "equal" or "DIFFER"; every differing dataset is
// printed on its own line.
DeterminismRow compare_determinism_record(const DeterminismRecord& record,
                                          const std::string& checkpoint);

}  // namespace bg::cli
