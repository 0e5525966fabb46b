// checksum.cpp: `bitgrad checksum FILE.h5`: the SHA-256 of every dataset's stored bytes, one
// line each ("<sha256>  <dataset>"), in name order: two runs, or two builds, agree bit for bit
// exactly when these lines do (attributes such as timings and the config are left out).
#include <cstdio>

#include "cli.h"
#include "core/checkpoint.h"
#include "core/sha256.h"

namespace bg::cli {

int run_checksum(const Args& args) {
  args.allow_only({});
  BG_CHECK(args.positional.size() == 1 && args.overrides.empty(), "checksum",
           "usage: bitgrad checksum FILE.h5");
  const CheckpointReader ck(args.positional[0]);
  for (const std::string& name : ck.datasets()) {
    const std::vector<uint8_t> bytes = ck.raw_bytes(name);
    std::printf("%s  %s\n", sha256_hex(bytes.data(), bytes.size()).c_str(), name.c_str());
  }
  return 0;
}

}  // namespace bg::cli
