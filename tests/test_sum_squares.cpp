// test_sum_squares.cpp: sum_squares, the gradient norm's one pass over the gradients: the op
// harness (f64 finite differences, CPU f32 against f64, CUDA against the CPU, strided inputs,
// 16-bit inputs on CUDA), and sum(x * x)'s bits exactly, on every pass count of the reduction.
#include "core/optim.h"
#include "harness.h"

namespace bg::test {
namespace {

OpCase sum_squares_case(Shape shape, bool strided) {
  OpCase c;
  c.name = "sum_squares";
  c.inputs = {{shape}};
  c.noncontiguous = strided;
  c.fn = [](const std::vector<Tensor>& x) { return sum_squares(x[0]); };
  c.reference = [](const std::vector<Tensor>& x) {
    return sum(x[0].to(DType::f64) * x[0].to(DType::f64));
  };
  return c;
}

// sum_squares(x) against sum(x * x), bit for bit: one segment, several, several passes.
void check_bits_of_sum_of_products(Device device, DType dtype) {
  Generator gen(81);
  for (Shape shape : {Shape{1}, Shape{37}, Shape{3, 2049}, Shape{1100, 3001}, Shape{5, 7, 3}}) {
    CAPTURE(shape_str(shape));
    const Tensor x = randn(shape, gen, 0, 1, dtype, device);
    CHECK(bit_mismatches(sum_squares(x), sum(x * x)) == 0);
    const Tensor t = x.ndim() >= 2 ? x.transpose(0, 1) : x;  // strided
    CHECK(bit_mismatches(sum_squares(t), sum(t * t)) == 0);
  }
}

}  // namespace

TEST_CASE("cpu: sum_squares") {
  check_cpu_case(sum_squares_case({4, 9}, false));
  check_cpu_case(sum_squares_case({3, 5, 7}, true));
  check_cpu_case(sum_squares_case({1}, false));
}

TEST_CASE("cuda: sum_squares") {
  BG_REQUIRE_CUDA();
  check_cuda_case(sum_squares_case({4, 9}, false));
  check_cuda_case(sum_squares_case({3, 5, 7}, true));
  // Several passes of the reduction; f32 only: 210,070 squares of N(0, 1) values sum past
  // f16's largest finite value (the output has the input's dtype, as sum's does).
  OpCase many = sum_squares_case({70, 3001}, false);
  many.half_on_cuda = false;
  check_cuda_case(many);
}

TEST_CASE("cpu: sum_squares gives sum(x * x)'s bits, and the gradient norm uses it") {
  check_bits_of_sum_of_products(Device::cpu(), DType::f32);
  check_bits_of_sum_of_products(Device::cpu(), DType::f64);
  CHECK(sum_squares(zeros({0, 3})).item() == 0.0);
  CHECK(sum_squares(full({}, 3.0, DType::f32)).item() == 9.0);
  CHECK_THROWS_WITH(sum_squares(zeros({2}, DType::i32)), doctest::Contains("floating"));
}

TEST_CASE("cuda: sum_squares gives sum(x * x)'s bits") {
  BG_REQUIRE_CUDA();
  check_bits_of_sum_of_products(Device::cuda(0), DType::f32);
}

}  // namespace bg::test
