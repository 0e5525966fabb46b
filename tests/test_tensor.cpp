// test_tensor.cpp: tensor handles, views, dtype conversions, devices, errors.
#include <cmath>

#include "core/dispatch.h"
#include "harness.h"

namespace bg::test {

TEST_CASE("cpu: views share storage and report geometry") {
  Tensor a = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = a.transpose(0, 1);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.strides() == Shape{1, 3});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  Tensor s = a.slice(1, 1, 3);
  CHECK(s.to_vector<float>() == std::vector<float>{1, 2, 4, 5});
  s.fill_(9);  // writes through to a
  CHECK(a.to_vector<float>() == std::vector<float>{0, 9, 9, 3, 9, 9});
  CHECK(a.reshape({3, 2}).data_ptr() == a.data_ptr());
  CHECK(t.reshape({6}).data_ptr() != a.data_ptr());  // needs a copy
  CHECK(a.permute({1, 0}).contiguous().to_vector<float>() == std::vector<float>{0, 3, 9, 9, 9, 9});
  CHECK(a.unsqueeze(0).shape() == Shape{1, 2, 3});
  CHECK(a.view({-1}).shape() == Shape{6});
  CHECK_THROWS_WITH(t.view({6}), doctest::Contains("[view] cannot view"));
  CHECK_THROWS_WITH(a.reshape({4, 2}), doctest::Contains("[reshape] cannot reshape (2, 3)"));
  CHECK(a.str().find("Tensor(2, 3) f32 cpu") == 0);
}

TEST_CASE("cpu: every dtype converts through every other") {
  const std::vector<double> vals{0, 1, 2, 3, 7, 100, 127};
  const DType all[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8,
                       DType::u8,  DType::i16, DType::u16, DType::i32,  DType::i64};
  for (DType from : all)
    for (DType to : all) {
      const Tensor x = from_vector(vals, {7}).to(from).to(to);
      CHECK_MESSAGE(x.to_vector<double>() == vals, dtype_name(from), " -> ", dtype_name(to));
    }
  // Rounding of the half types is round-to-nearest-even.
  CHECK(from_vector(std::vector<double>{1.0 + 1.0 / 1024 + 1e-9}, {1}).to(DType::f16).item() ==
        1.0 + 1.0 / 1024);
  CHECK(from_vector(std::vector<double>{257}, {1}).to(DType::bf16).item() == 256);
  const int64_t big = (int64_t(1) << 53) + 1;  // same-dtype copies are bit copies
  CHECK(from_vector(std::vector<int64_t>{big}, {1}).clone().to_vector<int64_t>()[0] == big);
}

TEST_CASE("cpu: shape dtype and device mismatches are errors naming the op and both sides") {
  const Tensor a = zeros({2, 3}), b = zeros({4, 3});
  CHECK_THROWS_WITH(add(a, b),
                    doctest::Contains("[add] shapes (2, 3) and (4, 3) cannot broadcast"));
  CHECK_THROWS_WITH(matmul(a, b),
                    doctest::Contains("[matmul] inner dimensions differ: (2, 3) @ (4, 3)"));
  CHECK_THROWS_WITH(add(a, zeros({2, 3}, DType::f64)),
                    doctest::Contains("[add] dtype mismatch: f32 and f64"));
  CHECK_THROWS_WITH(
      layernorm(zeros({2, 383}), ones({384}), Tensor()),
      doctest::Contains("[layernorm] expected parameter of shape (383,), got (384,)"));
  CHECK_THROWS_WITH(cross_entropy(zeros({3, 5}), zeros({3}, DType::f32)),
                    doctest::Contains("[cross_entropy] targets must be i32 or i64, got f32"));
  CHECK_THROWS_WITH(cross_entropy(zeros({3, 5}), from_vector(std::vector<int64_t>{0, 7, 1}, {3})),
                    doctest::Contains("target 7 out of range [0, 5)"));
  CHECK_THROWS_WITH(embedding(zeros({4, 2}), from_vector(std::vector<int64_t>{4}, {1})),
                    doctest::Contains("[embedding] index 4 out of range [0, 4)"));
  CHECK_THROWS_WITH(sum(a, {2}), doctest::Contains("[sum] dim 2 out of range for 2-d tensor"));
  CHECK_THROWS_WITH(parse_device("gpu"), doctest::Contains("[device] bad device 'gpu'"));
  CHECK_THROWS_WITH(zeros({2}).requires_grad_(false).backward(), doctest::Contains("[backward]"));
}

TEST_CASE("cpu: autograd accumulates detaches and respects no_grad") {
  Tensor x = from_vector(std::vector<double>{1, 2, 3}, {3}).requires_grad_();
  sum(x * x).backward();
  sum(x * 3.0).backward();  // accumulates
  CHECK(x.grad().to_vector<double>() == std::vector<double>{5, 7, 9});
  {
    NoGradGuard ng;
    CHECK_FALSE((x * 2.0).requires_grad());
  }
  CHECK_FALSE(x.detach().requires_grad());
  // A tensor used twice gets both contributions; the graph is freed after backward.
  Tensor y = from_vector(std::vector<double>{2}, {1}).requires_grad_();
  Tensor z = y * y + y;
  sum(z).backward();
  CHECK(y.grad().item() == doctest::Approx(5.0));
  CHECK_THROWS_WITH(sum(z).backward(), doctest::Contains("already freed"));
}

TEST_CASE("cuda: tensors move between devices and keep their values") {
  BG_REQUIRE_CUDA();
  Generator gen(3);
  const Tensor a = randn({37, 19}, gen);
  const Tensor g = a.to(Device::cuda(0));
  CHECK(g.is_cuda());
  CHECK(g.to(Device::cpu()).to_vector<float>() == a.to_vector<float>());
  CHECK(g.transpose(0, 1).contiguous().to(Device::cpu()).to_vector<float>() ==
        a.transpose(0, 1).contiguous().to_vector<float>());
  const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::i8,  DType::u8,
                       DType::i16, DType::u16, DType::i32,  DType::i64, DType::f64};
  const Tensor small = from_vector(std::vector<double>{0, 1, 5, 100, 127}, {5});
  for (DType from : all)
    for (DType to : all)
      CHECK_MESSAGE(
          small.to(Device::cuda(0)).to(from).to(to).to(Device::cpu()).to_vector<double>() ==
              small.to_vector<double>(),
          dtype_name(from), " -> ", dtype_name(to));
  // Conversions round the same way on both devices.
  const Tensor r = randn({4097}, gen);
  for (DType half : {DType::f16, DType::bf16})
    CHECK(r.to(Device::cuda(0)).to(half).to(Device::cpu()).to_vector<float>() ==
          r.to(half).to_vector<float>());
  CHECK_THROWS_WITH(add(g, a),
                    doctest::Contains("[add] tensors on different devices: cuda:0 and cpu"));
}

TEST_CASE("cuda: caching allocator reuses blocks in a steady loop") {
  BG_REQUIRE_CUDA();
  Generator gen(1);
  const Tensor w = randn({256, 256}, gen).to(Device::cuda(0)).requires_grad_();
  auto step = [&] {
    const Tensor x = randn({64, 256}, gen, 0, 1, DType::f32, Device::cuda(0));
    sum(gelu(matmul(x, w))).backward();
  };
  step();
  step();
  const size_t mallocs = cuda_allocator_stats(0).device_mallocs;
  for (int i = 0; i < 20; ++i) step();
  CHECK(cuda_allocator_stats(0).device_mallocs == mallocs);
}

}  // namespace bg::test
