// stop.h: a cooperative stop for long CPU work. The trainer's SIGINT/SIGTERM handler sets a flag;
// while a StopCheckScope names that flag, every CPU kernel launch checks it first and throws
// StopRequested, so Ctrl-C during a step that takes minutes on a CPU ends in about one op's time
// instead of the whole step's. The trainer opens a scope only around work it can abandon (the
// forward and backward passes, an evaluation), never around the optimizer's update.
#pragma once
#include <atomic>

#include "error.h"

namespace bg {

class StopRequested : public Error {
 public:
  StopRequested() : Error("[stop] stopped by a signal") {}
};

// Checks `flag` (non-zero: stop) at every CPU kernel launch while alive; null checks nothing.
// Scopes nest; the innermost decides.
class StopCheckScope {
 public:
  explicit StopCheckScope(const std::atomic<int>* flag);
  ~StopCheckScope();
  StopCheckScope(const StopCheckScope&) = delete;
  StopCheckScope& operator=(const StopCheckScope&) = delete;

 private:
  const std::atomic<int>* previous_;
};

// Throws StopRequested when the current scope's flag is set (core/dispatch.h calls it).
void check_stop();

}  // namespace bg
