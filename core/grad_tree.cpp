#include "core/grad_tree.h"

#include "core/error.h"
#include "core/ops.h"

namespace bg {

int64_t tree_split(int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  int64_t half = 1;
  while (half * 2 < n) half *= 2;  // the largest power of two below n
  return begin + half;
}

namespace {
void collect(int64_t begin, int64_t end, int64_t lo, int64_t hi, std::vector<TreeNode>* out) {
  if (end <= lo || begin >= hi) return;
  if (lo <= begin && end <= hi) {
    out->push_back({begin, end});
    return;
  }
  const int64_t mid = tree_split(begin, end);
  collect(begin, mid, lo, hi, out);
  collect(mid, end, lo, hi, out);
}
}  // namespace

std::vector<TreeNode> tree_nodes_within(int64_t leaves, int64_t begin, int64_t end) {
  BG_CHECK(leaves >= 1 && 0 <= begin && begin < end && end <= leaves, "grad_tree", "leaves [",
           begin, ", ", end, ") do not lie in a tree of ", leaves);
  std::vector<TreeNode> out;
  collect(0, leaves, begin, end, &out);
  return out;
}

TreeAccumulator::TreeAccumulator(int64_t leaves, int64_t begin, int64_t end)
    : layout_(tree_nodes_within(leaves, begin, end)), next_(begin) {}

// Within a node the leaves combine as a binary counter does: equal-sized neighbours merge as
// soon as both exist; at the node's end the stack folds from its top. That is the node's own
// tree (left part the largest power of two below its size), the same additions in the same order.
void TreeAccumulator::push(const Tensor& leaf) {
  BG_CHECK(node_ < layout_.size(), "grad_tree", "more leaves than the accumulator's range");
  stack_.emplace_back(1, leaf.clone());
  while (stack_.size() >= 2 && stack_[stack_.size() - 1].first == stack_[stack_.size() - 2].first) {
    auto right = std::move(stack_.back());
    stack_.pop_back();
    stack_.back().second = stack_.back().second + right.second;
    stack_.back().first += right.first;
  }
  if (++next_ == layout_[node_].end) close_node();
}

void TreeAccumulator::close_node() {
  Tensor acc = stack_.back().second;
  for (size_t i = stack_.size() - 1; i-- > 0;) acc = stack_[i].second + acc;
  stack_.clear();
  done_.push_back(acc);
  ++node_;
}

std::vector<Tensor> TreeAccumulator::nodes() {
  BG_CHECK(node_ == layout_.size(), "grad_tree", "the accumulator is missing leaves");
  return done_;
}

namespace {
Tensor root_of(int64_t begin, int64_t end, const std::vector<TreeNode>& nodes,
               const std::function<Tensor(size_t)>& value) {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].begin == begin && nodes[i].end == end) return value(i);
  BG_CHECK(end - begin >= 2, "grad_tree", "no node covers leaf ", begin);
  const int64_t mid = tree_split(begin, end);
  return root_of(begin, mid, nodes, value) + root_of(mid, end, nodes, value);
}
}  // namespace

Tensor tree_root(int64_t leaves, const std::vector<TreeNode>& nodes,
                 const std::function<Tensor(size_t)>& value) {
  return root_of(0, leaves, nodes, value);
}

}  // namespace bg
