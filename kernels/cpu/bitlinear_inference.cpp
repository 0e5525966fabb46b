// bitlinear_inference.cpp (CPU): the references of BitLinear's inference kernels
// (kernels/cuda/w2a8.cu, bitplane.cu): the kernel layout of the 2-bit codes, the W2A8 product
// read from it, and the bit-plane product computed by its popcount formula. Each decodes its
// format the plain way, so a CUDA kernel that agrees with it agrees with the layout's
// definition, and each rescales through rescale_int_product like int8_linear.
#include <vector>

#include "cpu_common.h"
#include "cpu_kernels.h"
#include "int_rescale.h"

namespace bg::cpu {

void w2_layout(const KView& w2, const KView& packed, int64_t k, StreamHandle) {
  const int64_t n = packed.shape[0], bytes = packed.shape[1], blocks = w2.shape[1] / 32;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t h = 0; h < blocks; ++h)
      for (int w = 0; w < 8; ++w) {
        const int t = w / 2, u = w % 2;
        uint32_t word = 0;
        for (int s = 0; s < 4; ++s)
          for (int j = 0; j < 4; ++j) {
            const int64_t e = 128 * h + 64 * u + 16 * s + 4 * t + j;
            const uint32_t code =
                e < k ? (ptr<uint8_t>(packed)[r * bytes + e / 4] >> (2 * (e % 4))) & 3u : 1u;
            word |= code << (8 * j + 2 * s);
          }
        uint8_t* dst = ptr<uint8_t>(w2) + r * blocks * 32 + h * 32 + 4 * w;
        for (int b = 0; b < 4; ++b) dst[b] = uint8_t(word >> (8 * b));
      }
}

void w2a8_linear(const KView& y, const KView& xq, const KView& w2, const KView& step,
                 const KView& beta, const KView& bias, StreamHandle) {
  const int64_t m = xq.shape[0], k = xq.shape[1], n = w2.shape[0], blocks = w2.shape[1] / 32;
  if (blocks != (k + 127) / 128) kernel_fail("w2a8_linear", "weights are not K columns wide");
  std::vector<int32_t> acc(size_t(m * n), 0);
  std::vector<int8_t> w(static_cast<size_t>(k));
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* row = ptr<uint8_t>(w2) + j * blocks * 32;
    for (int64_t e = 0; e < k; ++e) {  // k = 128h + 64u + 16s + 4t + i, by the layout
      const int64_t h = e / 128, u = (e / 64) % 2, s = (e / 16) % 4, t = (e / 4) % 4, i = e % 4;
      const uint8_t byte = row[h * 32 + 8 * t + 4 * u + i];
      w[size_t(e)] = int8_t(((byte >> (2 * s)) & 3) - 1);
    }
    for (int64_t r = 0; r < m; ++r) {
      const int8_t* x = ptr<int8_t>(xq) + r * xq.strides[0];
      int32_t sum = 0;
      for (int64_t e = 0; e < k; ++e) sum += int32_t(x[e]) * w[size_t(e)];
      acc[size_t(r * n + j)] = sum;
    }
  }
  rescale_int_product(y, acc.data(), step, beta, bias, "w2a8_linear");
}

void bitplane_pack(const KView& planes, const KView& q, StreamHandle) {
  const int64_t rows = q.shape[0], k = q.shape[1], bytes = planes.shape[2];
  uint8_t* pos = ptr<uint8_t>(planes);
  uint8_t* neg = pos + rows * bytes;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < bytes; ++b) {
      uint32_t p = 0, m = 0;
      for (int j = 0; j < 8; ++j) {
        const int64_t e = 8 * b + j;
        const int v = e < k ? ptr<int8_t>(q)[r * q.strides[0] + e] : 0;
        p |= uint32_t(v > 0) << j;
        m |= uint32_t(v < 0) << j;
      }
      pos[r * bytes + b] = uint8_t(p);
      neg[r * bytes + b] = uint8_t(m);
    }
}

void bitplane_linear(const KView& y, const KView& xp, const KView& wp, const KView& step,
                     const KView& beta, const KView& bias, StreamHandle) {
  const int64_t m = xp.shape[1], n = wp.shape[1], bytes = xp.shape[2];
  if (wp.shape[2] != bytes) kernel_fail("bitplane_linear", "planes of different widths");
  const uint8_t *xpos = ptr<uint8_t>(xp), *xneg = xpos + m * bytes;
  const uint8_t *wpos = ptr<uint8_t>(wp), *wneg = wpos + n * bytes;
  std::vector<int32_t> acc(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int32_t agree = 0, nonzero = 0;
      for (int64_t b = 0; b < bytes; ++b) {
        const unsigned xpb = xpos[i * bytes + b], xnb = xneg[i * bytes + b];
        const unsigned wpb = wpos[j * bytes + b], wnb = wneg[j * bytes + b];
        agree += __builtin_popcount(xpb & wpb) + __builtin_popcount(xnb & wnb);
        nonzero += __builtin_popcount((xpb | xnb) & (wpb | wnb));
      }
      acc[size_t(i * n + j)] = 2 * agree - nonzero;
    }
  rescale_int_product(y, acc.data(), step, beta, bias, "bitplane_linear");
}

}  // namespace bg::cpu
