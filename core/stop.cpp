#include "stop.h"

namespace bg {
namespace {
// The flag of the innermost scope. Thread-local: a scope opened by the trainer's thread does not
// make another thread's kernels throw.
thread_local const std::atomic<int>* t_stop_flag = nullptr;
}  // namespace

StopCheckScope::StopCheckScope(const std::atomic<int>* flag) : previous_(t_stop_flag) {
  t_stop_flag = flag;
}

StopCheckScope::~StopCheckScope() { t_stop_flag = previous_; }

void check_stop() {
  if (t_stop_flag && t_stop_flag->load(std::memory_order_relaxed) != 0) throw StopRequested();
}

}  // namespace bg
