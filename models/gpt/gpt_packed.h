// gpt_packed.h: the packed inference file of a BitLinear GPT (`bitgrad export --packed`,
// docs/bitlinear.md "Packed export"). Each BitLinear layer P keeps P.weight_packed, its ternary
// weights at 2 bits (the export layout of core/bitlinear.h), and P.weight_scale, the one f32
// beta that multiplies; a BitLinear LM head keeps lm_head.weight_packed/weight_scale. No latent
// weights are stored. Every other parameter (embeddings, norms, biases) is stored as in a
// training checkpoint, so the packed model's logits equal the training forward's bit for bit.
#pragma once
#include "models/gpt/gpt.h"

namespace bg {

class CheckpointWriter;
class CheckpointReader;

inline constexpr const char* kPackedFormat = "bitgrad-packed-1";

struct PackedSizes {
  int64_t matrices = 0;    // ternary matrices packed
  int64_t code_bytes = 0;  // their 2-bit codes
  int64_t scale_bytes = 0;
  int64_t fp16_bytes = 0;  // the same matrices in fp16
};

// Writes the model's parameters in packed form (the caller adds the attributes).
PackedSizes save_packed_gpt(const GPT& model, CheckpointWriter& ck);
// Reads a packed file's weights into `model` (built from the file's config on the CPU): each
// BitLinear layer (and the head) switches to its packed form on `device` and releases its latent
// weight; the remaining parameters are left for load_parameters. A missing or misshapen array,
// a scale count other than one, a non-positive scale or a code of 3 is a one-line error.
void load_packed_weights(GPT& model, const CheckpointReader& ck, Device device);

}  // namespace bg
