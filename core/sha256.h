// sha256.h: SHA-256 (FIPS 180-4) of a byte string, as lowercase hex. For `bitgrad checksum`:
// run-to-run and before/after comparisons of checkpoint datasets.
#pragma once
#include <cstddef>
#include <string>

namespace bg {

std::string sha256_hex(const void* data, size_t size);

}  // namespace bg
