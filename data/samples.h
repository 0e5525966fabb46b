// samples.h: distribution samples from files: one value per line (text), a CSV column (by
// index or header name), or an HDF5 dataset. Every value is checked; a bad one is an error
// naming file and line (or dataset index), unless skip_invalid asks to count and skip it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bg {

struct SampleFileSpec {
  std::string path;
  std::string format = "auto";      // auto (by extension) | text | csv | hdf5
  std::string column = "0";         // csv: 0-based index or header name
  std::string dataset = "samples";  // hdf5
  bool skip_invalid = false;
};

struct SampleSet {
  std::vector<double> values;
  int64_t skipped = 0;     // invalid values skipped (skip_invalid)
  std::string first_skip;  // the first skip's reason, for the report
};

// `check` returns an empty string for a usable value, else why it is not (e.g. out of range).
SampleSet read_samples(const SampleFileSpec& spec, const std::function<std::string(double)>& check);

}  // namespace bg
