#include "embedding.h"

namespace bg {

Embedding::Embedding(int64_t num, int64_t dim, Generator& gen, double init_std) {
  BG_CHECK(num > 0 && dim > 0, "embedding", "sizes must be positive, got ", num, " x ", dim);
  weight = register_parameter("weight", randn({num, dim}, gen, 0.0, init_std));
}

}  // namespace bg
