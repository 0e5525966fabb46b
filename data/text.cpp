#include "text.h"

#include <fstream>
#include <sstream>

#include "core/files.h"
#include "kernels/philox.h"

namespace bg {

std::string read_text_file(const std::string& path) {
  check_input_file(path, "data", "text file");
  std::ifstream f(path, std::ios::binary);
  BG_CHECK(f.good(), "data", path, ": cannot open file");
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  BG_CHECK(!text.empty(), "data", path, ": file is empty");
  return text;
}

void sample_windows(const std::vector<int32_t>& tokens, int64_t batch, int64_t context,
                    Generator& gen, Device device, Tensor* x, Tensor* y, int64_t ahead,
                    int64_t base) {
  const int64_t n = int64_t(tokens.size()) - (ahead - 1);  // the last window start + context
  BG_CHECK(ahead >= 1 && (ahead == 1 || base > 0), "data", "bad window targets");
  BG_CHECK(n > context, "data", "need more than ", context + ahead - 1,
           " tokens for a window, have ", tokens.size());
  const uint64_t first = gen.take(uint64_t(batch));
  std::vector<int64_t> xs(size_t(batch * context)), ys(size_t(batch * context));
  for (int64_t b = 0; b < batch; ++b) {
    const Philox4 r = philox4x32(first + uint64_t(b), gen.seed ^ 0xDA7AULL);
    const uint64_t u = (uint64_t(r.v[0]) << 32) | r.v[1];
    const int64_t start = int64_t(u % uint64_t(n - context));
    for (int64_t t = 0; t < context; ++t) {
      xs[size_t(b * context + t)] = tokens[size_t(start + t)];
      int64_t target = 0;
      for (int64_t j = 0; j < ahead; ++j)
        target = target * base + tokens[size_t(start + t + 1 + j)];
      ys[size_t(b * context + t)] = target;
    }
  }
  *x = from_vector(xs, {batch, context}, device);
  *y = from_vector(ys, {batch, context}, device);
}

}  // namespace bg
