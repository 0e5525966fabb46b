// text.h: text files and random training windows drawn from the shared counter-based RNG (so a
// run's batches depend only on the seed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"

namespace bg {

// Whole file as bytes; a missing or empty file is an error naming the path.
std::string read_text_file(const std::string& path);

// `batch` windows of `context` tokens at positions drawn from `gen`: x (B, T) and the next
// tokens y (B, T), both i64 on `device`. With ahead > 1, y is the next `ahead` tokens as one id,
// sum_j token[t + 1 + j] base^(ahead - 1 - j) (a GPT predicting byte pairs).
void sample_windows(const std::vector<int32_t>& tokens, int64_t batch, int64_t context,
                    Generator& gen, Device device, Tensor* x, Tensor* y, int64_t ahead = 1,
                    int64_t base = 0);

}  // namespace bg
