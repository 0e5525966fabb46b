// grad_tree.h: the fixed summation tree of a step's micro-batch gradients, the same whatever
// the number of ranks that compute them. Under train.deterministic a step's gradient is the sum
// of its M micro-batch gradients (the leaves, each computed from zero) in one tree fixed by M
// alone: node [l, r) is split at l + the largest power of two below r - l. A rank that holds
// the consecutive leaves [b, e) sums them into the maximal nodes inside [b, e) (one node when
// e - b is a power of two and b a multiple of it); the nodes of all ranks then finish the tree.
// One process holding every leaf computes the same additions in the same order, so one GPU and
// N GPUs give the same bits. Floating-point addition is commutative, so a + b and b + a agree;
// only the grouping is fixed here.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"

namespace bg {

struct TreeNode {
  int64_t begin = 0, end = 0;  // leaves [begin, end)
  bool operator==(const TreeNode& o) const { return begin == o.begin && end == o.end; }
};

// Where node [begin, end) of a tree splits (end - begin >= 2).
int64_t tree_split(int64_t begin, int64_t end);
// The maximal nodes of the tree over `leaves` lying inside [begin, end), in leaf order.
std::vector<TreeNode> tree_nodes_within(int64_t leaves, int64_t begin, int64_t end);

// Sums consecutive leaves into the nodes tree_nodes_within gives: push() each leaf in order;
// nodes() returns each node's sum. Holds at most log2(leaves) + 1 partial sums at a time.
class TreeAccumulator {
 public:
  TreeAccumulator(int64_t leaves, int64_t begin, int64_t end);
  void push(const Tensor& leaf);  // copied; the caller may overwrite it afterwards
  std::vector<Tensor> nodes();    // after every leaf of [begin, end)
  const std::vector<TreeNode>& layout() const { return layout_; }

 private:
  void close_node();
  std::vector<TreeNode> layout_;
  size_t node_ = 0;                                // the node being filled
  int64_t next_ = 0;                               // the next leaf
  std::vector<std::pair<int64_t, Tensor>> stack_;  // (leaf count, partial sum)
  std::vector<Tensor> done_;
};

// The root of the tree over `leaves` from nodes that cover [0, leaves) exactly (each node's sum
// given by value(i) for the i-th entry of `nodes`).
Tensor tree_root(int64_t leaves, const std::vector<TreeNode>& nodes,
                 const std::function<Tensor(size_t)>& value);

}  // namespace bg
