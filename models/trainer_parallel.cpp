// trainer_parallel.cpp: the Trainer's data-parallel half (models/trainer.h): each rank's share
// of a step's micro-batches, the gradient sum over the ranks (NCCL's all-reduce in the default
// mode; under train.deterministic the fixed tree of core/grad_tree.h, sharded over the ranks),
// and ZeRO-1's sharded optimizer state. With one process every path here reduces to the
// one-process step.
#include <algorithm>

#include "core/ops.h"
#include "trainer.h"

namespace bg {

void Trainer::set_process_group(ProcessGroup* group) {
  group_ = group ? group : &solo_;
  const int64_t n = group_->size();
  BG_CHECK(cfg_.grad_accum % n == 0, cfg_.command.c_str(), "train.grad_accum = ", cfg_.grad_accum,
           " micro-batches per step cannot be shared by ", n,
           " ranks: make it a multiple of the ranks (each rank runs grad_accum / ranks; e.g. --set "
           "train.grad_accum=",
           (cfg_.grad_accum + n - 1) / n * n, ")");
  BG_CHECK(n == 1 || !cfg_.cuda_graph, cfg_.command.c_str(),
           "train.cuda_graph cannot capture a data-parallel step (set train.cuda_graph: false)");
  if (sharded()) {
    BG_CHECK(adamw_ != nullptr, cfg_.command.c_str(),
             "train.shard_optimizer shards AdamW's state; optimizer.type is sgd");
    const int64_t total = params_.numel(), shard = (total + n - 1) / n;
    const int64_t begin = std::min(total, group_->rank() * shard);
    adamw_->shard(begin, std::min(total, begin + shard));
  }
}

// Every rank's `mine` (its shard of a flat buffer of `total` elements, padded to the common
// shard length) laid end to end: the whole buffer, on every rank.
Tensor Trainer::gather_shards(const Tensor& mine, int64_t total) {
  const int64_t n = group_->size(), shard = (total + n - 1) / n;
  const Tensor padded = zeros({shard}, DType::f32, device_);
  if (mine.numel() > 0) padded.slice(0, 0, mine.numel()).copy_(mine);
  const Tensor all = zeros({shard * n}, DType::f32, device_);
  group_->all_gather(padded, all);
  return all.slice(0, 0, total);
}

// Before a save under ZeRO-1: the whole moments, gathered on every rank (all take part).
void Trainer::gather_optimizer_state() {
  full_m_ = gather_shards(adamw_->exp_avg(), params_.numel()).clone();
  full_v_ = gather_shards(adamw_->exp_avg_sq(), params_.numel()).clone();
}

// Micro-batch `micro` of this rank in step `step`, counted from this run's first micro-batch as
// one process would count it.
int64_t Trainer::run_micro_index(int64_t step, int64_t micro) const {
  const int64_t per_rank = cfg_.grad_accum / group_->size();
  return (step - first_step_) * cfg_.grad_accum + group_->rank() * per_rank + micro;
}

// Buckets of about 32 MiB of whole parameters, in the gradient buffer's order.
void Trainer::build_buckets() {
  constexpr int64_t kBucketFloats = int64_t(8) << 20;
  std::vector<std::pair<int64_t, const TensorImpl*>> by_offset;
  for (const auto& [name, t] : params_.named())
    if (!bucket_of_.count(t.impl())) {
      bucket_of_[t.impl()] = 0;
      by_offset.emplace_back(t.impl()->offset, t.impl());
    }
  std::sort(by_offset.begin(), by_offset.end());
  for (const auto& [offset, impl] : by_offset) {
    if (buckets_.empty() || buckets_.back().end - buckets_.back().begin >= kBucketFloats)
      buckets_.push_back({offset, offset, 0});
    GradBucket& b = buckets_.back();
    int64_t n = 1;
    for (int64_t d : impl->shape) n *= d;
    b.end = offset + n;
    ++b.params;
    bucket_of_[impl] = buckets_.size() - 1;
  }
}

// The default path: this rank's micro-batches accumulate into the gradients; in the last one's
// backward each bucket is summed over the ranks (NCCL's order) as soon as its parameters are
// final, overlapped with the rest of the backward.
void Trainer::backward_micro_batches(int64_t step, Tensor* loss) {
  const int64_t per_rank = cfg_.grad_accum / group_->size();
  const bool parallel = group_->size() > 1;
  if (parallel && group_->overlaps() && buckets_.empty()) build_buckets();
  params_.zero_grad();
  for (int64_t micro = 0; micro < per_rank; ++micro) {
    if (parallel) task_.seek_micro_batch(run_micro_index(step, micro));
    *loss = task_.train_loss();
    if (!cfg_.cuda_graph) loss_watch_.check(*loss, step + 1);
    const Tensor scaled = cfg_.grad_accum > 1 ? *loss / double(cfg_.grad_accum) : *loss;
    if (!parallel || micro + 1 < per_rank || !group_->overlaps()) {
      scaled.backward();
      if (parallel && micro + 1 == per_rank) group_->all_reduce_sum(params_.grads());
      continue;
    }
    std::vector<int> waiting(buckets_.size());
    for (size_t b = 0; b < buckets_.size(); ++b) waiting[b] = buckets_[b].params;
    auto start = [&](size_t b) {
      waiting[b] = -1;
      group_->all_reduce_sum_async(params_.grads().slice(0, buckets_[b].begin, buckets_[b].end));
    };
    {
      LeafReadyScope ready([&](const TensorImpl* leaf) {
        const auto it = bucket_of_.find(leaf);
        if (it != bucket_of_.end() && waiting[it->second] > 0 && --waiting[it->second] == 0)
          start(it->second);
      });
      scaled.backward();
    }
    for (size_t b = 0; b < buckets_.size(); ++b)  // parameters the backward never reached
      if (waiting[b] >= 0) start(b);
    group_->finish_async();
  }
}

// train.deterministic: every micro-batch's gradient from zero, summed in the fixed tree over the
// step's micro-batches; this rank's leaves into its nodes, the nodes of every rank into the root.
void Trainer::tree_backward(int64_t step, Tensor* loss) {
  const int64_t per_rank = cfg_.grad_accum / group_->size();
  const int64_t first = group_->rank() * per_rank;
  TreeAccumulator acc(cfg_.grad_accum, first, first + per_rank);
  for (int64_t micro = 0; micro < per_rank; ++micro) {
    params_.zero_grad();
    if (group_->size() > 1) task_.seek_micro_batch(run_micro_index(step, micro));
    *loss = task_.train_loss();
    loss_watch_.check(*loss, step + 1);
    (cfg_.grad_accum > 1 ? *loss / double(cfg_.grad_accum) : *loss).backward();
    acc.push(params_.grads());
  }
  const std::vector<Tensor> sums = acc.nodes();
  if (group_->size() == 1) {
    params_.grads().copy_(
        tree_root(cfg_.grad_accum, acc.layout(), [&](size_t i) { return sums[i]; }));
    return;
  }
  reduce_tree_over_ranks(sums);
}

// Each rank owns a shard of the gradient: every rank's node sums are sent, shard by shard, to the
// shards' owners; each owner finishes the tree on its shard; the shards are then gathered. The
// additions are elementwise, so a shard's bits are the whole tensor's at those elements.
void Trainer::reduce_tree_over_ranks(const std::vector<Tensor>& sums) {
  const int n = group_->size(), me = group_->rank();
  const int64_t leaves = cfg_.grad_accum, per_rank = leaves / n;
  const int64_t total = params_.grads().numel(), shard = (total + n - 1) / n;
  auto shard_of = [&](const Tensor& t, int owner) {
    const int64_t begin = std::min(total, owner * shard);
    return t.slice(0, begin, std::min(total, begin + shard));
  };
  const int64_t my_len = shard_of(params_.grads(), me).numel();
  std::vector<Transfer> sends, recvs;
  std::vector<TreeNode> all_nodes;
  std::vector<Tensor> values;
  for (int p = 0; p < n; ++p) {
    const std::vector<TreeNode> nodes = tree_nodes_within(leaves, p * per_rank, (p + 1) * per_rank);
    for (size_t i = 0; i < nodes.size(); ++i) {
      all_nodes.push_back(nodes[i]);
      if (p == me) {
        values.push_back(shard_of(sums[i], me));
        continue;
      }
      const Tensor buf = empty({my_len}, DType::f32, device_);
      recvs.push_back({p, buf});
      values.push_back(buf);
    }
  }
  for (int q = 0; q < n; ++q)
    if (q != me)
      for (const Tensor& node : sums) sends.push_back({q, shard_of(node, q)});
  group_->exchange(sends, recvs);
  const Tensor root = tree_root(leaves, all_nodes, [&](size_t i) { return values[i]; });
  const Tensor gathered = zeros({shard * n}, DType::f32, device_);
  const Tensor padded = zeros({shard}, DType::f32, device_);
  if (my_len > 0) padded.slice(0, 0, my_len).copy_(root);
  group_->all_gather(padded, gathered);
  params_.grads().copy_(gathered.slice(0, 0, total));
}

}  // namespace bg
