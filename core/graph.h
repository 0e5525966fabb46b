// graph.h: whole-step CUDA graphs. CudaGraph runs fn() once under stream capture (recording,
// not executing) and replays it with one launch. fn must issue the same work every time into
// the same memory: inputs that change per step are copied into fixed buffers before replay().
// Device blocks freed during capture stay reserved for the graph's lifetime, so the caching
// allocator never hands them to anyone else while replays may write them. Random ops inside fn
// draw their Philox counters at capture time, so every replay reuses the same numbers.
#pragma once
#include <functional>

#include "device.h"

namespace bg {

class CudaGraph {
 public:
  CudaGraph(Device device, const std::function<void()>& fn);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  void replay();

 private:
  Device device_;
  void* exec_ = nullptr;
};

}  // namespace bg
