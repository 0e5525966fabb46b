#include "autograd.h"

#include <unordered_map>
#include <unordered_set>

#include "ops.h"

namespace bg {
namespace {
thread_local bool g_grad_enabled = true;
}

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

namespace {

std::shared_ptr<Node> attach(Tensor& output, const char* name, std::vector<Tensor> inputs) {
  if (!needs_grad(inputs)) return nullptr;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->inputs = std::move(inputs);
  output.impl()->grad_fn = node;
  output.impl()->requires_grad = true;
  return node;
}

}  // namespace

void record(Tensor& output, const char* name, std::vector<Tensor> inputs, BackwardFn backward) {
  if (auto node = attach(output, name, std::move(inputs))) node->backward = std::move(backward);
}

void record_folding(Tensor& output, const char* name, std::vector<Tensor> inputs, size_t fold_input,
                    FoldingBackwardFn backward) {
  BG_CHECK(fold_input < inputs.size(), "record_folding", "input ", fold_input, " of ",
           inputs.size());
  if (auto node = attach(output, name, std::move(inputs))) {
    node->backward_folding = std::move(backward);
    node->fold_input = fold_input;
  }
}

namespace {

thread_local std::function<void(const TensorImpl*)>* g_leaf_ready = nullptr;

void accumulate_leaf(TensorImpl* leaf, const Tensor& g) {
  if (leaf->grad) {
    Tensor existing(leaf->grad);
    // In place: grads may be views of a flat buffer (one kernel, no temporary).
    if (existing.is_contiguous() && existing.dtype() == g.dtype() &&
        existing.device() == g.device() &&
        (existing.is_cuda() || existing.dtype() == DType::f32 || existing.dtype() == DType::f64))
      add_(existing, g);
    else
      existing.copy_(add(existing, g));
  } else {
    Tensor fresh = g.contiguous();
    // g may alias another tensor's gradient (e.g. add passes one grad to both inputs).
    leaf->grad = (fresh.impl() == g.impl() ? fresh.clone() : fresh).impl_ptr();
  }
}

}  // namespace

Tensor leaf_gradient_buffer(const Tensor& t) {
  if (g_leaf_ready || !t.defined() || !t.requires_grad() || t.impl()->grad_fn || !t.impl()->grad)
    return Tensor();
  Tensor grad(t.impl()->grad);
  const bool fits = grad.shape() == t.shape() && grad.dtype() == t.dtype() &&
                    grad.device() == t.device() && grad.is_contiguous();
  return fits ? grad : Tensor();
}

LeafReadyScope::LeafReadyScope(std::function<void(const TensorImpl*)> ready) {
  BG_CHECK(!g_leaf_ready, "backward", "one LeafReadyScope at a time");
  g_leaf_ready = new std::function<void(const TensorImpl*)>(std::move(ready));
}
LeafReadyScope::~LeafReadyScope() {
  delete g_leaf_ready;
  g_leaf_ready = nullptr;
}

void Tensor::backward(const Tensor& grad) const {
  BG_CHECK(requires_grad(), "backward", "tensor does not require grad");
  Tensor seed = grad;
  if (!seed.defined()) {
    BG_CHECK(numel() == 1, "backward", "implicit gradient needs a scalar output, got shape ",
             shape_str(shape()));
    seed = ones(shape(), dtype(), device());
  }
  BG_CHECK(seed.shape() == shape(), "backward", "gradient shape ", shape_str(seed.shape()),
           " does not match output shape ", shape_str(shape()));
  NoGradGuard no_grad;
  if (!impl()->grad_fn) {  // a leaf
    accumulate_leaf(impl(), seed);
    if (g_leaf_ready) (*g_leaf_ready)(impl());
    return;
  }
  // Reverse topological order by iterative DFS over nodes.
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack{{impl()->grad_fn.get(), 0}};
  seen.insert(impl()->grad_fn.get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const Tensor& in = node->inputs[next++];
      Node* child = in.defined() ? in.impl()->grad_fn.get() : nullptr;
      if (child && seen.insert(child).second) stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  // With a LeafReadyScope: the last node (in backward order) that feeds each leaf.
  std::unordered_map<const TensorImpl*, Node*> last_feeder;
  if (g_leaf_ready)
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      for (const Tensor& in : (*it)->inputs)
        if (in.defined() && in.requires_grad() && !in.impl()->grad_fn) last_feeder[in.impl()] = *it;
  std::unordered_map<Node*, Tensor> grads;
  grads[impl()->grad_fn.get()] = seed;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = grads.find(node);
    if (found == grads.end()) continue;  // no gradient flowed here
    Tensor g = found->second;
    grads.erase(found);
    BG_CHECK(node->backward || node->backward_folding, "backward", "graph through '", node->name,
             "' was already freed by an earlier backward()");
    // The gradient pending for the folding input, if another consumer already gave one.
    Node* fold_child = nullptr;
    if (node->backward_folding) {
      const Tensor& in = node->inputs[node->fold_input];
      if (in.defined() && in.requires_grad() && in.impl()->grad_fn &&
          grads.count(in.impl()->grad_fn.get()))
        fold_child = in.impl()->grad_fn.get();
      for (size_t j = 0; j < node->inputs.size(); ++j)  // the same tensor twice: plain adds
        if (j != node->fold_input && node->inputs[j].defined() &&
            node->inputs[j].impl()->grad_fn.get() == fold_child)
          fold_child = nullptr;
    }
    std::vector<Tensor> in_grads =
        node->backward_folding
            ? node->backward_folding(g, fold_child ? grads.at(fold_child) : Tensor())
            : node->backward(g);
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const Tensor& in = node->inputs[i];
      if (!in.defined() || !in.requires_grad() || i >= in_grads.size() || !in_grads[i].defined())
        continue;
      const Tensor& gi = in_grads[i];
      BG_CHECK(gi.shape() == in.shape(), "backward", "op '", node->name, "' returned gradient ",
               shape_str(gi.shape()), " for input ", i, " of shape ", shape_str(in.shape()));
      if (Node* child = in.impl()->grad_fn.get()) {
        auto slot = grads.find(child);
        if (slot == grads.end()) {
          grads.emplace(child, gi);
        } else if (child == fold_child && i == node->fold_input) {
          slot->second = gi;  // already holds the pending gradient
        } else {
          slot->second = add(slot->second, gi);
        }
      } else {
        accumulate_leaf(in.impl(), gi.dtype() == in.dtype() ? gi : gi.to(in.dtype()));
      }
    }
    // Free saved tensors now; a second backward() through this graph is an error.
    node->backward = nullptr;
    node->backward_folding = nullptr;
    if (g_leaf_ready)
      for (const Tensor& in : node->inputs)
        if (in.defined() && !in.impl()->grad_fn) {
          auto f = last_feeder.find(in.impl());
          if (f != last_feeder.end() && f->second == node) {
            last_feeder.erase(f);
            (*g_leaf_ready)(in.impl());
          }
        }
  }
  // Leaves whose feeders got no gradient (a branch nothing flowed through) are final too, told
  // in graph order (never the map's, which follows addresses: ranks must agree on the order).
  if (g_leaf_ready)
    for (auto it = order.rbegin(); it != order.rend() && !last_feeder.empty(); ++it)
      for (const Tensor& in : (*it)->inputs)
        if (in.defined() && last_feeder.erase(in.impl())) (*g_leaf_ready)(in.impl());
}

}  // namespace bg
