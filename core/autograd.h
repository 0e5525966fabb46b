// autograd.h: eager reverse-mode differentiation. Each differentiable op, right after computing
// its output, calls record() with the inputs and a backward function that maps the output's
// gradient to one gradient per input. backward() walks the recorded graph in reverse
// topological order. Gradient rule: leaf (parameter) grads accumulate into .grad; gradients of
// intermediate tensors are summed inside one backward() call and then dropped.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tensor.h"

namespace bg {

using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;
// A backward that folds the gradient already pending for one input (summed from that input's
// other consumers; undefined when there is none) into the gradient it returns for it, so the
// sum costs no separate add kernel: the returned gradient must equal add(pending, own) bit for
// bit (e.g. the residual stream's gradient through a layernorm).
using FoldingBackwardFn =
    std::function<std::vector<Tensor>(const Tensor& grad_output, const Tensor& pending)>;

struct Node {
  const char* name;
  std::vector<Tensor> inputs;          // one gradient edge each
  BackwardFn backward;                 // either this,
  FoldingBackwardFn backward_folding;  // or this, which folds into inputs[fold_input]
  size_t fold_input = 0;
};

bool grad_enabled();

// While one lives, backward() calls `ready(leaf)` for each leaf (parameter) as soon as the node
// that gives it its last gradient contribution of this backward has run: its .grad is then final
// for this pass (the data-parallel all-reduce of a bucket of gradients starts there, overlapped
// with the rest of the backward). One at a time, on the thread that runs backward().
class LeafReadyScope {
 public:
  explicit LeafReadyScope(std::function<void(const TensorImpl*)> ready);
  ~LeafReadyScope();
  LeafReadyScope(const LeafReadyScope&) = delete;
  LeafReadyScope& operator=(const LeafReadyScope&) = delete;
};

// The buffer a backward may add `t`'s gradient into itself, returning no gradient for t: t's
// own .grad when t is a leaf that requires one and already has one (FlatParameters' views, which
// zero_grad zeroes) of t's shape and dtype, contiguous; undefined otherwise, and while a
// LeafReadyScope lives (a leaf it waits on must get its gradient through backward(), so that its
// last feeder is known). Adding into it is what backward() would do with a returned gradient.
Tensor leaf_gradient_buffer(const Tensor& t);

// Disables graph recording in its scope (evaluation, optimizer steps, inside backward).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when grad mode is on and some input requires a gradient.
bool needs_grad(const std::vector<Tensor>& inputs);
// Attaches a node to `output` if needs_grad(inputs). `backward` must not capture `output`
// itself (that would be a cycle): capture output.detach() when the output is needed.
void record(Tensor& output, const char* name, std::vector<Tensor> inputs, BackwardFn backward);
// record() for a backward that folds the pending gradient of inputs[fold_input].
void record_folding(Tensor& output, const char* name, std::vector<Tensor> inputs, size_t fold_input,
                    FoldingBackwardFn backward);

}  // namespace bg
