// w2a8_tiles.h: the Hopper W2A8 kernel (w2a8_wgmma.cu) by tile shape, so that
// `bitgrad bench bitlinear` can time every shape it has at each batch (w2a8_linear picks one by
// the batch). Call only where hopper_kernels_available().
#pragma once
#include "../kernel_types.h"

namespace bg::cuda {

int w2a8_wgmma_tile_count();
// "warpgroups x batch rows x 128-k blocks a stage x stages", e.g. "2x128x2x3".
const char* w2a8_wgmma_tile_name(int tile);
// w2a8_linear's product (operands checked by it) with tile shape `tile`, or with the one it
// would pick for the batch when tile is -1.
void w2a8_linear_wgmma(const KView& y, const KView& xq, const KView& w2, const KView& step,
                       const KView& beta, const KView& bias, int tile, StreamHandle stream);

}  // namespace bg::cuda
