// checksum.cpp: `bitgrad checksum FILE.h5`: the SHA-256 of every dataset's element type, shape
// and stored bytes, one line each ("<sha256>  <dataset>"), in name order: two runs, or two
// builds, agree bit for bit exactly when these lines do (attributes such as timings and the
// config are left out).
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
  std::string lines;  // printed only once every dataset was read: a refusal prints no digests
  for (const std::string& name : ck.datasets()) {
    // What the bytes are, then the bytes: the same bytes stored as another type or shape (an
    // exponent bias edited, say) are other numbers, and hash differently.
    std::string data = ck.type_text(name) + " " + shape_str(ck.shape(name)) + "\n";
    const std::vector<uint8_t> bytes = ck.raw_bytes(name);
    data.append(bytes.begin(), bytes.end());
    lines += sha256_hex(data.data(), data.size()) + "  " + name + "\n";
  }
  std::fputs(lines.c_str(), stdout);
  return 0;
}

}  // namespace bg::cli
