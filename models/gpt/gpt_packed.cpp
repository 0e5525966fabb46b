#include "gpt_packed.h"

#include <algorithm>
#include <cmath>

#include "core/checkpoint.h"
#include "layers/bitlinear.h"

namespace bg {
namespace {

std::vector<std::pair<std::string, std::shared_ptr<BitLinear>>> bitlinear_layers(const GPT& m) {
  std::vector<std::pair<std::string, std::shared_ptr<BitLinear>>> out;
  for (const auto& [name, mod] : m.named_modules())
    if (auto b = std::dynamic_pointer_cast<BitLinear>(mod)) out.emplace_back(name, b);
  return out;
}

void save_matrix(const std::string& prefix, const Tensor& weight, TernaryScale scale,
                 CheckpointWriter& ck, PackedSizes* sizes) {
  const TernaryWeights q = ternary_quantize(weight, scale);
  const Tensor packed = pack_ternary(q).to(Device::cpu());
  ck.tensor(prefix + ".weight_packed", packed);
  ck.tensor(prefix + ".weight_scale", q.beta.reshape({1}).to(Device::cpu()));
  sizes->matrices += 1;
  sizes->code_bytes += packed.numel();
  sizes->scale_bytes += 4;
  sizes->fp16_bytes += 2 * weight.numel();
}

PackedTernary read_matrix(const CheckpointReader& ck, const std::string& prefix, int64_t out,
                          int64_t in, Device device) {
  const std::string codes_name = prefix + ".weight_packed", scale_name = prefix + ".weight_scale";
  const Tensor codes = ck.tensor(codes_name, DType::u8, {out, (in + 3) / 4});
  const Tensor scale = ck.tensor(scale_name, DType::f32);
  BG_CHECK(scale.numel() == 1, "checkpoint", ck.path(), ": '", scale_name, "' holds ",
           scale.numel(), " values, expected 1 (beta, the per-tensor scale that multiplies)");
  const float beta = scale.to_vector<float>()[0];
  BG_CHECK(std::isfinite(beta) && beta > 0, "checkpoint", ck.path(), ": '", scale_name, "' is ",
           beta, ", expected a positive scale");
  const std::vector<uint8_t> bytes = codes.to_vector<uint8_t>();
  for (size_t i = 0; i < bytes.size(); ++i)
    for (int j = 0; j < 4; ++j)
      BG_CHECK(((bytes[i] >> (2 * j)) & 3) != 3, "checkpoint", ck.path(), ": '", codes_name,
               "' holds code 3, which no ternary weight has (row ", int64_t(i) / codes.size(1),
               ", byte ", int64_t(i) % codes.size(1), ")");
  return w2_from_packed(codes.to(device), in, scale.reshape({}));
}

}  // namespace

PackedSizes save_packed_gpt(const GPT& model, CheckpointWriter& ck) {
  const auto layers = bitlinear_layers(model);
  BG_CHECK(!layers.empty(), "export", "the model has no BitLinear layers (model.linear: dense)");
  PackedSizes sizes;
  std::vector<std::string> latent;
  for (const auto& [name, layer] : layers) {
    BG_CHECK(!layer->is_packed(), "export", name, " is packed already");
    save_matrix(name, layer->weight, layer->options().weight_scale, ck, &sizes);
    latent.push_back(name + ".weight");
  }
  const GPTConfig& cfg = model.config();
  if (cfg.head == HeadKind::bitlinear)
    save_matrix("lm_head", model.token_embedding(), cfg.linear.bitlinear.weight_scale, ck, &sizes);
  for (const auto& [name, t] : model.named_parameters())
    if (std::find(latent.begin(), latent.end(), name) == latent.end())
      ck.tensor(name, t.detach().to(Device::cpu()));
  return sizes;
}

void load_packed_weights(GPT& model, const CheckpointReader& ck, Device device) {
  const auto layers = bitlinear_layers(model);
  BG_CHECK(!layers.empty(), "checkpoint", ck.path(),
           ": a packed file of a model without BitLinear layers");
  for (const auto& [name, layer] : layers)
    layer->use_packed(read_matrix(ck, name, layer->weight.size(0), layer->weight.size(1), device));
  const GPTConfig& cfg = model.config();
  if (cfg.head == HeadKind::bitlinear)
    model.use_packed_head(read_matrix(ck, "lm_head", cfg.vocab_size, cfg.n_embd, device));
}

}  // namespace bg
