// test_trainer.cpp: the library Trainer (models/trainer.h) on a small regression task: the loss
// goes down, the after-backward hook runs once per step with the step's gradients, a run
// stopped and resumed from last.h5 ends with the same bits as one that never stopped, the
// first non-finite loss is named by its step with the checkpoint that is kept, and a
// CUDA-graph step gives the eager step's bits.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "harness.h"
#include "layers/linear.h"
#include "models/trainer.h"

namespace bg::test {
namespace {

// y = x . w_true + noise, fitted by one Linear; batches drawn from a counter-based generator
// whose position the checkpoints carry. poison_at > 0 makes that step's loss NaN.
struct RegressionTask : TrainTask {
  RegressionTask(Device d, uint64_t seed) : device(d), init(seed), data(seed + 1) {
    layer = std::make_shared<Linear>(6, 1, true, init);
  }
  Tensor train_loss() override {
    ++calls;
    const Tensor x = randn({16, 6}, data, 0, 1, DType::f32, device);
    const Tensor w = from_vector(std::vector<float>{1, -2, 0.5f, 3, 0, -1}, {6, 1}, device);
    Tensor err = layer->forward(x) - matmul(x, w);
    if (poison_at > 0 && calls == poison_at) err = err / 0.0;
    return mean(err * err);
  }
  double validation_loss() override {
    Generator fixed(99);
    const Tensor x = randn({64, 6}, fixed, 0, 1, DType::f32, device);
    const Tensor w = from_vector(std::vector<float>{1, -2, 0.5f, 3, 0, -1}, {6, 1}, device);
    const Tensor err = layer->forward(x) - matmul(x, w);
    return mean(err * err).item();
  }
  void save(CheckpointWriter& ck) const override {
    ck.attr("data_rng_offset", int64_t(data.offset));
  }
  void load(const CheckpointReader& ck, const std::string&) override {
    data.offset = uint64_t(ck.int_attr("data_rng_offset"));
  }
  Device device;
  Generator init, data;
  std::shared_ptr<Linear> layer;
  int64_t calls = 0, poison_at = 0;
};

std::string scratch_dir(const std::string& name) {
  const std::string d = scratch_path("trainer_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TrainerConfig config(const std::string& out_dir, int64_t steps) {
  TrainerConfig c;
  c.out_dir = out_dir;
  c.steps = steps;
  c.eval_interval = 5;
  c.log_interval = 5;
  c.grad_clip = 1.0;
  c.schedule.lr = 0.05;
  c.adamw.weight_decay = 0.0;
  return c;
}

std::vector<float> train(const TrainerConfig& c, RegressionTask& task, TrainResult* result) {
  FlatParameters params(task.layer->named_parameters(), task.device);
  Trainer trainer(c, params, task);
  *result = trainer.run();
  return params.values().to_vector<float>();
}

}  // namespace

TEST_CASE("cpu: the trainer lowers the loss and calls the hook once per step") {
  const std::string dir = scratch_dir("hook");
  RegressionTask task(Device::cpu(), 1);
  FlatParameters params(task.layer->named_parameters(), Device::cpu());
  Trainer trainer(config(dir, 40), params, task);
  int hooks = 0;
  bool grads_present = true;
  trainer.after_backward([&](FlatParameters& p) {
    ++hooks;
    double s = 0;
    for (float g : p.grads().to_vector<float>()) s += std::fabs(g);
    grads_present = grads_present && s > 0;
  });
  const double before = task.validation_loss();  // about |w_true|^2 = 15.25
  const TrainResult r = trainer.run();
  CHECK(r.finished);
  CHECK(r.steps_done == 40);
  CHECK(hooks == 40);
  CHECK(grads_present);
  CHECK(before > 5.0);
  CHECK(r.best_val < 0.1 * before);
  CHECK(std::filesystem::exists(dir + "/last.h5"));
  CHECK(std::filesystem::exists(dir + "/best.h5"));
  CHECK(std::filesystem::exists(dir + "/metrics.csv"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("cpu: a run stopped and resumed by the trainer ends with the same bits") {
  const std::string a = scratch_dir("straight"), b = scratch_dir("resumed");
  TrainResult r;
  RegressionTask straight(Device::cpu(), 2);
  const std::vector<float> want = train(config(a, 20), straight, &r);
  TrainerConfig first = config(b, 20);
  first.stop_after = 7;  // between evaluations: last.h5 is written by the stop
  RegressionTask part1(Device::cpu(), 2);
  train(first, part1, &r);
  CHECK_FALSE(r.finished);
  CHECK(r.steps_done == 7);
  TrainerConfig rest = config(b, 20);
  rest.resume = true;
  RegressionTask part2(Device::cpu(), 2);
  const std::vector<float> got = train(rest, part2, &r);
  CHECK(r.finished);
  CHECK(got == want);
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

TEST_CASE("cpu: the trainer names the first non-finite step and the checkpoint it keeps") {
  const std::string dir = scratch_dir("nan");
  RegressionTask task(Device::cpu(), 3);
  task.poison_at = 8;
  TrainResult r;
  const std::string want = "the loss became non-finite at step 8; stopping: the last checkpoint, " +
                           dir + "/last.h5 (step 5), is kept as it was";
  CHECK_THROWS_WITH(train(config(dir, 20), task, &r), doctest::Contains(want.c_str()));
  std::filesystem::remove_all(dir);
}

TEST_CASE("cuda: a CUDA-graph trainer step gives the eager step's bits") {
  BG_REQUIRE_CUDA();
  // A graph replays the captured work on fixed buffers: this task copies step t's batch into
  // one before the step (before_step), as fit-bide does.
  struct TableTask : TrainTask {
    explicit TableTask(int64_t steps) : init(4), data(5) {
      layer = std::make_shared<Linear>(6, 1, true, init);
      w_true = from_vector(std::vector<float>{1, -2, 0.5f, 3, 0, -1}, {6, 1}, gpu);
      xs = randn({steps, 16, 6}, data, 0, 1, DType::f32, gpu);
      x = empty({16, 6}, DType::f32, gpu);
    }
    void before_step(int64_t step) override {
      x.copy_(xs.slice(0, step, step + 1).reshape({16, 6}));
    }
    Tensor train_loss() override {
      const Tensor err = layer->forward(x) - matmul(x, w_true);
      return mean(err * err);
    }
    Device gpu = Device::cuda(0);
    Generator init, data;
    std::shared_ptr<Linear> layer;
    Tensor w_true, xs, x;
  };
  auto run = [](bool graph) {
    TableTask task(12);
    TrainerConfig c = config("", 12);
    c.eval_interval = 0;
    c.grad_clip = 0;
    c.cuda_graph = graph;
    c.record_every_loss = true;
    FlatParameters params(task.layer->named_parameters(), task.gpu);
    Trainer trainer(c, params, task);
    const TrainResult r = trainer.run();
    CHECK(r.finished);
    CHECK(trainer.adamw()->steps() == 12);
    return std::make_pair(params.values().to_vector<float>(), trainer.step_losses());
  };
  const auto eager = run(false), graph = run(true);
  REQUIRE(eager.second.size() == 12);
  CHECK(eager.second.back() < eager.second.front());
  CHECK(graph.second == eager.second);
  CHECK(graph.first == eager.first);
}

}  // namespace bg::test
