#include "model_spec.h"

namespace bg {

const Settings<ModelSpec>& model_spec_settings() {
  static const Settings<ModelSpec> s = [] {
    Settings<ModelSpec> s;
    s.choice("model.type", [](auto& m) -> auto& { return m.type; },
             "char_mlp, gpt or forecaster (real-valued series, data.format: series)");
    const auto other = [](const ModelSpec& m) {
      return "model.type is " + std::string(enum_name(m.type));
    };
    s.when([](const ModelSpec& m) { return m.type == ModelType::char_mlp; }, other);
    s.nested(char_mlp_settings(), [](auto& m) -> auto& { return m.mlp; });
    s.when([](const ModelSpec& m) { return m.type == ModelType::gpt; }, other);
    s.nested(gpt_settings(), [](auto& m) -> auto& { return m.gpt; });
    s.string("model.init_from", [](auto& m) -> auto& { return m.init_from; },
             "pretrained GPT-2 weights to start from: a Hugging Face folder (model.safetensors "
             "and config.json), a .safetensors file with config.json beside it, or an llm.c .bin; "
             "its layers, heads, width and model.gelu must be the config's (block_size may be "
             "smaller: wpe's first rows; vocab_size larger: zero rows)");
    s.when([](const ModelSpec& m) { return m.type == ModelType::gpt && !m.init_from.empty(); },
           [](const ModelSpec&) { return std::string("model.init_from is not set"); });
    s.integer("model.freeze_trunk_steps", [](auto& m) -> auto& { return m.freeze_trunk_steps; },
              0, int64_t(1) << 40,
              "with model.init_from and model.head: bide: the first N steps train the head's own "
              "parameters only, the pretrained trunk frozen (0: none)");
    s.when([](const ModelSpec& m) { return m.type == ModelType::forecaster; }, other);
    s.nested(forecaster_settings(), [](auto& m) -> auto& { return m.forecaster; });
    s.when([](const ModelSpec& m) { return m.type != ModelType::char_mlp; }, other);
    // auto: the fused kernel where it can honour the run's compute mode (the CPU; CUDA under bf16
    // precision with head_dim 64), the composed ops elsewhere.
    s.choice("model.attention", [](auto& m) -> auto& { return m.attention; },
             "gpt and forecaster: fused (one kernel per pass; CUDA needs bf16 precision and head dim "
             "64), "
             "composed (any mode) or auto (fused where it honours the mode)");
    return s;
  }();
  return s;
}

int64_t model_context(const ModelSpec& spec) {
  switch (spec.type) {
    case ModelType::gpt:
      return spec.gpt.block_size;
    case ModelType::char_mlp:
      return spec.mlp.context;
    case ModelType::forecaster:
      return spec.forecaster.block_size;
  }
  return 0;
}

}  // namespace bg
