// elementwise_math.h: the scalar math of every unary/binary op, written once and compiled for
// both the CPU reference and the CUDA kernels, so the two backends cannot drift apart in formula.
// Arithmetic type A is float (f32/f16/bf16 storage) or double (f64, CPU).
#pragma once
#include <cmath>

#include "kernel_types.h"

#if defined(__CUDACC__)
#define BG_HD __host__ __device__ __forceinline__
#else
#define BG_HD inline
#endif

namespace bg {

BG_HD float m_exp(float x) { return expf(x); }
BG_HD double m_exp(double x) { return ::exp(x); }
BG_HD float m_log(float x) { return logf(x); }
BG_HD double m_log(double x) { return ::log(x); }
BG_HD float m_tanh(float x) { return tanhf(x); }
BG_HD double m_tanh(double x) { return ::tanh(x); }
BG_HD float m_erf(float x) { return erff(x); }
BG_HD double m_erf(double x) { return ::erf(x); }
BG_HD float m_sqrt(float x) { return sqrtf(x); }
BG_HD double m_sqrt(double x) { return ::sqrt(x); }
BG_HD float m_log1p(float x) { return log1pf(x); }
BG_HD double m_log1p(double x) { return ::log1p(x); }
BG_HD float m_lgamma(float x) { return lgammaf(x); }
BG_HD double m_lgamma(double x) { return ::lgamma(x); }

// digamma(x) = d/dx log Gamma(x) for x > 0 (lgamma's derivative): the recurrence
// psi(x) = psi(x + 1) - 1/x up to x >= 6, then the asymptotic series (error below 1e-12 there).
template <typename A>
BG_HD A m_digamma(A x) {
  A shift = A(0);
  while (x < A(6)) {
    shift -= A(1) / x;
    x += A(1);
  }
  const A f = A(1) / (x * x);
  const A series =
      f * (A(1.0 / 12) - f * (A(1.0 / 120) - f * (A(1.0 / 252) - f * (A(1.0 / 240) - f * A(1.0 / 132)))));
  return shift + m_log(x) - A(0.5) / x - series;
}
// log(1 + e^x) without overflow: x itself past 20 (e^-20 is below f32's precision there).
template <typename A>
BG_HD A m_softplus(A x) {
  return x > A(20) ? x : m_log1p(m_exp(x));
}

// Parameters of an elementwise op; `a`, `b` feed affine (a*x + b).
struct UnaryParams {
  double a = 1.0, b = 0.0;
};

constexpr double kGeluK = 0.7978845608028654;       // sqrt(2/pi)
constexpr double kInvSqrt2 = 0.7071067811865476;    // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1/sqrt(2 pi)

template <typename A>
BG_HD A unary_scalar(UnaryOp op, A x, A pa, A pb) {
  switch (op) {
    case UnaryOp::exp:
      return m_exp(x);
    case UnaryOp::log:
      return m_log(x);
    case UnaryOp::tanh:
      return m_tanh(x);
    case UnaryOp::relu:
      return x > A(0) ? x : A(0);
    case UnaryOp::gelu: {
      A inner = A(kGeluK) * (x + A(0.044715) * x * x * x);
      return A(0.5) * x * (A(1) + m_tanh(inner));
    }
    case UnaryOp::gelu_erf:
      return A(0.5) * x * (A(1) + m_erf(x * A(kInvSqrt2)));
    case UnaryOp::silu:
      return x / (A(1) + m_exp(-x));
    case UnaryOp::sigmoid:
      return A(1) / (A(1) + m_exp(-x));
    case UnaryOp::neg:
      return -x;
    case UnaryOp::sqrt:
      return m_sqrt(x);
    case UnaryOp::rsqrt:
      return A(1) / m_sqrt(x);
    case UnaryOp::abs:
      return x < A(0) ? -x : x;
    case UnaryOp::affine:
      return pa * x + pb;
    case UnaryOp::softplus:
      return m_softplus(x);
    case UnaryOp::lgamma:
      return m_lgamma(x);
  }
  return x;
}

// d(loss)/dx given x, y = f(x) and dy. Uses whichever of x, y is cheaper and exact.
template <typename A>
BG_HD A unary_scalar_grad(UnaryOp op, A x, A y, A dy, A pa) {
  switch (op) {
    case UnaryOp::exp:
      return dy * y;
    case UnaryOp::log:
      return dy / x;
    case UnaryOp::tanh:
      return dy * (A(1) - y * y);
    case UnaryOp::relu:
      return x > A(0) ? dy : A(0);
    case UnaryOp::gelu: {
      A x2 = x * x;
      A t = m_tanh(A(kGeluK) * (x + A(0.044715) * x2 * x));
      A dinner = A(kGeluK) * (A(1) + A(3 * 0.044715) * x2);
      return dy * (A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * dinner);
    }
    case UnaryOp::gelu_erf:  // Phi(x) + x phi(x)
      return dy * (A(0.5) * (A(1) + m_erf(x * A(kInvSqrt2))) +
                   x * A(kInvSqrt2Pi) * m_exp(A(-0.5) * x * x));
    case UnaryOp::silu: {
      A s = A(1) / (A(1) + m_exp(-x));
      return dy * s * (A(1) + x * (A(1) - s));
    }
    case UnaryOp::sigmoid:
      return dy * y * (A(1) - y);
    case UnaryOp::neg:
      return -dy;
    case UnaryOp::sqrt:
      return dy * A(0.5) / y;
    case UnaryOp::rsqrt:
      return dy * A(-0.5) * y * y * y;
    case UnaryOp::abs:
      return x > A(0) ? dy : (x < A(0) ? -dy : A(0));
    case UnaryOp::affine:
      return dy * pa;
    case UnaryOp::softplus:
      return dy / (A(1) + m_exp(-x));
    case UnaryOp::lgamma:
      return dy * m_digamma(x);
  }
  return dy;
}

template <typename A>
BG_HD A binary_scalar(BinaryOp op, A a, A b) {
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      return a / b;
    case BinaryOp::maximum:
      return a > b ? a : b;
    case BinaryOp::minimum:
      return a < b ? a : b;
    case BinaryOp::eq:
      return a == b ? A(1) : A(0);
    case BinaryOp::lt:
      return a < b ? A(1) : A(0);
    case BinaryOp::gt:
      return a > b ? A(1) : A(0);
  }
  return a;
}

inline bool binary_is_comparison(BinaryOp op) {
  return op == BinaryOp::eq || op == BinaryOp::lt || op == BinaryOp::gt;
}

}  // namespace bg
