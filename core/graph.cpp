#include "graph.h"

#include "../kernels/cuda/device_runtime.h"
#include "allocator.h"
#include "error.h"

namespace bg {

CudaGraph::CudaGraph(Device device, const std::function<void()>& fn) : device_(device) {
  BG_CHECK(device.is_cuda(), "graph", "CUDA graphs need a CUDA device, got ", device.str());
  const StreamHandle stream = stream_for(device);
  synchronize(device);
  cuda_begin_reservation(device.index);
  cuda::graph_begin_capture(stream);
  try {
    fn();
  } catch (...) {
    try {
      cuda::graph_destroy(cuda::graph_end_capture(stream));
    } catch (...) {  // the original error is the one worth reporting
    }
    cuda_end_reservation(device.index);
    cuda_release_reservation(device.index);
    throw;
  }
  exec_ = cuda::graph_end_capture(stream);
  cuda_end_reservation(device.index);
}

CudaGraph::~CudaGraph() {
  if (!exec_) return;
  try {
    synchronize(device_);
  } catch (...) {  // destructors never throw
  }
  cuda::graph_destroy(exec_);
  cuda_release_reservation(device_.index);
}

void CudaGraph::replay() { cuda::graph_launch(exec_, stream_for(device_)); }

}  // namespace bg
