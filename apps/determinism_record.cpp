#include "determinism_record.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "core/checkpoint.h"
#include "core/config.h"
#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"

namespace bg::cli {
namespace {

constexpr const char* kHeader = "# bitgrad check-determinism record";
constexpr const char* kSettingPrefix = "#| ";  // one line a setting of the recorded run

}  // namespace

std::vector<std::string> determinism_settings(const std::string& effective_yaml) {
  // What does not change a run's bits is left out: where it writes (run.name, run.out_dir), and
  // train.cuda_graph (a replayed step is the eager step's work, tests/test_lm_cuda_graph.cpp),
  // so records made with either compare.
  std::vector<std::string> lines;
  for (const auto& [key, value] : flat_settings(effective_yaml))
    if (key != "run.name" && key != "run.out_dir" && key != "train.cuda_graph")
      lines.push_back(key + ": " + value);
  return lines;
}

namespace {

// dataset name -> SHA-256 of its stored bytes, in name order.
std::map<std::string, std::string> digests(const std::string& checkpoint) {
  const CheckpointReader ck(checkpoint);
  std::map<std::string, std::string> out;
  for (const std::string& name : ck.datasets()) {
    const std::vector<uint8_t> bytes = ck.raw_bytes(name);
    out[name] = sha256_hex(bytes.data(), bytes.size());
  }
  return out;
}

}  // namespace

void write_determinism_record(const std::string& path, const std::string& checkpoint,
                              const std::string& config, int64_t steps,
                              const std::string& device_name, const std::string& mode_text,
                              const std::vector<std::string>& settings) {
  // The origin line is one line whatever the config's path holds (the reader reads by line).
  const auto one_line = [](std::string v) {
    for (char& c : v)
      if (c == '\n' || c == '\r') c = ' ';
    return v;
  };
  std::ostringstream text;
  text << kHeader << "\n# config " << one_line(config) << ", " << steps << " steps, on "
       << one_line(device_name) << " (compute " << mode_text << ")\n";
  for (const std::string& s : settings) text << kSettingPrefix << s << "\n";
  for (const auto& [name, digest] : digests(checkpoint)) text << digest << "  " << name << "\n";
  write_file_atomic(path, text.str(), "check-determinism");
}

DeterminismRecord read_determinism_record(const std::string& path) {
  check_input_file(path, "check-determinism", "--compare record");
  std::istringstream in(read_file_limited(path, "check-determinism", "--compare record", 1 << 24));
  std::string line;
  BG_CHECK(std::getline(in, line) && line == kHeader, "check-determinism", path,
           ": not a check-determinism record (write one with --record)");
  DeterminismRecord record;
  record.path = path;
  for (int64_t n = 2; std::getline(in, line); ++n) {
    if (line.rfind(kSettingPrefix, 0) == 0) {
      record.settings.push_back(line.substr(3));
      continue;
    }
    if (line.rfind("# ", 0) == 0) {
      if (record.origin.empty()) record.origin = line.substr(2);
      continue;
    }
    const size_t gap = line.find("  ");
    BG_CHECK(gap == 64 && line.size() > 66, "check-determinism", path, ":", n,
             ": expected '<sha256>  <dataset>', got '", line.substr(0, 80), "'");
    record.digests[line.substr(66)] = line.substr(0, 64);
  }
  BG_CHECK(!record.digests.empty(), "check-determinism", path, ": the record lists no datasets");
  return record;
}

namespace {

// "key.path: value" lines as key -> the whole line.
std::map<std::string, std::string> by_key(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> out;
  for (const std::string& line : lines) out[line.substr(0, line.find(": "))] = line;
  return out;
}

}  // namespace

void check_same_settings(const DeterminismRecord& record, const std::vector<std::string>& here,
                         const std::function<bool(const std::string&)>& given,
                         const std::function<bool(const std::string&)>& known) {
  if (record.settings.empty()) return;  // a record from before settings were recorded
  const std::map<std::string, std::string> mine = by_key(here), theirs = by_key(record.settings);
  for (const std::string& line : here) {
    const std::string key = line.substr(0, line.find(": "));
    const auto it = theirs.find(key);
    // A key the record lacks came after it; left at its default it keeps the record's bits
    // (a new setting's default is the behaviour before it).
    if (it == theirs.end() && !given(key)) continue;
    if (it == theirs.end())
      fail("check-determinism", record.path, " records a run without '", key,
           "' (made before the setting existed, at its default); here '", line,
           "' is set: compare without it");
    if (it->second != line)
      fail("check-determinism", record.path, " records a run of other settings (here '", line,
           "', in the record '", it->second, "'); compare the same config, --set and --steps");
  }
  for (const auto& [key, line] : theirs)
    if (!mine.count(key)) {
      // A key this build reads, absent here, belongs to another kind of run (bitlinear.* with
      // model.linear: dense, a forecaster's keys for a GPT): the configs differ, not the builds.
      if (known(key))
        fail("check-determinism", record.path, " records '", line,
             "', a setting this run does not use (its config makes another kind of run); "
             "compare the same config, --set and --steps");
      fail("check-determinism", record.path, " records '", line,
           "', a setting this build does not read; compare with the build that made it");
    }
}

DeterminismRow compare_determinism_record(const DeterminismRecord& record,
                                          const std::string& checkpoint) {
  const std::map<std::string, std::string> here = digests(checkpoint);
  int64_t differ = 0, total = int64_t(record.digests.size());
  for (const auto& [name, digest] : here) total += !record.digests.count(name);
  for (const auto& [name, digest] : record.digests) {
    const auto it = here.find(name);
    const char* what = it == here.end() ? "missing here" : it->second != digest ? "differs" : "";
    if (!*what) continue;
    std::printf("  dataset '%s' %s\n", name.c_str(), what);
    ++differ;
  }
  for (const auto& [name, digest] : here)
    if (!record.digests.count(name)) {
      std::printf("  dataset '%s' is not in the record\n", name.c_str());
      ++differ;
    }
  const std::string from = str_cat(record.path, " (", record.origin, ")");
  if (differ)
    return {"against record", "DIFFER",
            str_cat(differ, " of ", total, " datasets differ from ", from)};
  return {"against record", "equal",
          str_cat("all ", record.digests.size(), " datasets bitwise equal to ", from)};
}

}  // namespace bg::cli
