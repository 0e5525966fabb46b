// test_grad_tree.cpp: the fixed summation tree of a step's micro-batch gradients
// (core/grad_tree.h). N simulated ranks, run one after another, each summing its consecutive
// leaves into its nodes and then finishing the tree from every rank's nodes, give one process's
// bits for N = 1, 2, 3, 4, 6 and 12 over 12 leaves; a different grouping (the plain running sum)
// does not, so the test can tell.
#include "core/grad_tree.h"
#include "harness.h"

namespace bg::test {
namespace {

std::vector<float> host(const Tensor& t) { return t.contiguous().to_vector<float>(); }

// The sum of `leaves` as `ranks` ranks would form it.
std::vector<float> tree_sum(const std::vector<Tensor>& leaves, int64_t ranks) {
  const int64_t m = int64_t(leaves.size()), per = m / ranks;
  std::vector<TreeNode> nodes;
  std::vector<Tensor> values;
  for (int64_t r = 0; r < ranks; ++r) {
    TreeAccumulator acc(m, r * per, (r + 1) * per);
    for (int64_t i = r * per; i < (r + 1) * per; ++i) acc.push(leaves[size_t(i)]);
    const std::vector<Tensor> sums = acc.nodes();
    nodes.insert(nodes.end(), acc.layout().begin(), acc.layout().end());
    values.insert(values.end(), sums.begin(), sums.end());
  }
  return host(tree_root(m, nodes, [&](size_t i) { return values[i]; }));
}

}  // namespace

TEST_CASE("cpu: the gradient tree's split and the nodes of a rank's leaves") {
  CHECK(tree_split(0, 12) == 8);
  CHECK(tree_split(8, 12) == 10);
  CHECK(tree_split(0, 7) == 4);
  CHECK(tree_split(4, 7) == 6);
  CHECK(tree_split(0, 2) == 1);
  CHECK(tree_nodes_within(12, 0, 12) == std::vector<TreeNode>{{0, 12}});
  CHECK(tree_nodes_within(12, 0, 4) == std::vector<TreeNode>{{0, 4}});
  CHECK(tree_nodes_within(12, 4, 8) == std::vector<TreeNode>{{4, 8}});
  CHECK(tree_nodes_within(12, 8, 12) == std::vector<TreeNode>{{8, 12}});
  CHECK(tree_nodes_within(12, 0, 3) == std::vector<TreeNode>{{0, 2}, {2, 3}});
  CHECK(tree_nodes_within(12, 3, 6) == std::vector<TreeNode>{{3, 4}, {4, 6}});
  CHECK(tree_nodes_within(6, 2, 4) == std::vector<TreeNode>{{2, 4}});
  CHECK_THROWS_WITH(tree_nodes_within(6, 4, 7), doctest::Contains("do not lie in a tree of 6"));
}

TEST_CASE("cpu: N simulated ranks sum a step's gradients to one process's bits") {
  Generator gen(test_seed());
  std::vector<Tensor> leaves;
  for (int i = 0; i < 12; ++i)  // magnitudes that make the grouping show in the bits
    leaves.push_back(randn({4099}, gen, 0, 1) * double(1 << (i % 5) * 3));
  const std::vector<float> one = tree_sum(leaves, 1);
  for (int64_t ranks : {2, 3, 4, 6, 12}) {
    CAPTURE(ranks);
    CHECK(tree_sum(leaves, ranks) == one);
  }
  Tensor running = leaves[0].clone();
  for (size_t i = 1; i < leaves.size(); ++i) running = running + leaves[i];
  CHECK(host(running) != one);  // another grouping gives other bits: the check can fail
  // Close to the exact sum all the same.
  Tensor exact = zeros({4099}, DType::f64);
  for (const Tensor& l : leaves) exact = exact + l.to(DType::f64);
  CHECK(rel_err(from_vector(one, {4099}).to(DType::f64), exact) < 1e-6);
}

}  // namespace bg::test

namespace bg::test {

// The data-parallel overlap starts a bucket's sum when backward says its parameters are final:
// each leaf is told once, after its last contribution (a tied weight after both uses), with the
// gradient it ends the pass with.
TEST_CASE("cpu: backward tells each parameter once, when its gradient is final") {
  Generator gen(3);
  const Tensor w = randn({5, 4}, gen).requires_grad_(true);
  const Tensor v = randn({4}, gen).requires_grad_(true);
  const Tensor unused = randn({3}, gen).requires_grad_(true);
  const Tensor a = randn({2, 5}, gen), b = randn({4, 3}, gen);
  std::vector<std::pair<const TensorImpl*, std::vector<float>>> told;
  {
    LeafReadyScope ready([&](const TensorImpl* leaf) {
      const Tensor g = leaf == w.impl() ? w.grad() : v.grad();
      told.emplace_back(leaf, g.clone().to_vector<float>());
    });
    // w is used twice (first and last in the forward, like a tied embedding).
    const Tensor h = matmul(a, w);                      // (2, 4)
    const Tensor out = sum(h * v) + sum(matmul(w, b));  // w again, at the end
    out.backward();
  }
  REQUIRE(told.size() == 2);
  CHECK(told[0].first != told[1].first);
  for (const auto& [leaf, g] : told) {
    CHECK((leaf == w.impl() || leaf == v.impl()));
    CHECK(g == (leaf == w.impl() ? w.grad() : v.grad()).to_vector<float>());  // final when told
  }
  CHECK_FALSE(unused.grad().defined());
}

}  // namespace bg::test
