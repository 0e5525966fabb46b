// gpt_weights.h: GPT-2's weights between bitgrad's parameter names (nanoGPT's:
// transformer.h.N.attn.c_attn.weight, (out, in)) and the layouts other tools keep them in. One
// place for each mapping; the import and export commands and their tests go through these.
//
// Hugging Face transformers (GPT2Model / GPT2LMHeadModel state dicts, model.safetensors): the
// same names with or without the "transformer." prefix; the four projections are Conv1D, their
// weights stored (in, out), so transposed each way; the attention-mask buffers (h.N.attn.bias,
// h.N.attn.masked_bias) are not weights and are skipped; lm_head.weight, where a file keeps it,
// must equal wte (the head is tied); the vocabulary is the tokenizer's (50,257), padded with zero
// rows to the model's on the way in and cut back on the way out.
//
// llm.c (data/llmc_format.h): each per-layer tensor stacked over the layers, qkv in one matrix
// as c_attn is, (out, in) as bitgrad; wte padded to padded_vocab_size.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "data/llmc_format.h"
#include "models/gpt/gpt.h"

namespace bg {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// The model a Hugging Face GPT-2 config.json describes (n_layer, n_head, n_embd, n_positions,
// vocab_size; activation_function gelu_new / gelu_pytorch_tanh -> tanh, gelu -> erf;
// layer_norm_epsilon 1e-5, the only one bitgrad's layernorm takes), with biases, no dropout; its
// vocab_size padded up to `padded_vocab` when that is larger. Each field checked in one line,
// and the fields that would change the computation refused unless they hold bitgrad's:
// model_type gpt2, scale_attn_weights true, scale_attn_by_inverse_layer_idx false,
// add_cross_attention false, n_inner 4 x n_embd (or null), tie_word_embeddings true.
GPTConfig gpt_config_from_hf(const std::string& config_json, const std::string& where,
                             int64_t padded_vocab = 0);
// The config.json transformers' GPT2LMHeadModel reads for `cfg` with a vocabulary of `vocab`.
std::string hf_config_json(const GPTConfig& cfg, int64_t vocab);

// bitgrad's parameters (GPT::named_parameters' names and shapes) for `cfg` from a Hugging Face
// state dict whose vocabulary has `token_ids` ids (config.json's vocab_size): wte holds exactly
// that many rows and is padded with zero rows to cfg.vocab_size; missing, extra, doubly named and
// misshapen tensors refused in one line.
NamedTensors gpt_params_from_hf(const std::map<std::string, Tensor>& hf, const GPTConfig& cfg,
                                int64_t token_ids);
// The state dict transformers' GPT2LMHeadModel loads ("transformer." names, Conv1D layout, the
// vocabulary cut to `vocab` rows, lm_head.weight left out: tied) from bitgrad's parameters.
NamedTensors hf_from_gpt_params(const NamedTensors& params, const GPTConfig& cfg, int64_t vocab);

// bitgrad's parameters for `cfg` from pretrained GPT-2 weights at `path` (model.init_from): a
// Hugging Face folder (model.safetensors and config.json), a .safetensors file with config.json
// beside it, or an llm.c .bin checkpoint. The file's layers, heads, width and GELU form must be
// cfg's; cfg's block_size may be smaller than the file's positions (wpe's first rows, as
// nanoGPT's crop_block_size) and its vocabulary larger than the file's ids (zero rows) or, for
// llm.c's padded vocabulary, smaller down to its ids. A NaN or infinite weight is refused naming
// its tensor.
NamedTensors load_pretrained_gpt2(const std::string& path, const GPTConfig& cfg);

// GPT-2's weights at `path` (as load_pretrained_gpt2 reads them for the model's trunk) copied
// into `model`'s parameters, names and shapes checked. A BIDE or hybrid head (model.head: bide)
// keeps its own drawn parameters (lm_head.*) on the pretrained trunk.
void load_pretrained_into(GPT& model, const std::string& path);

// `pretrained` (load_pretrained_gpt2's, read from `path`) copied into `model`'s parameters,
// names and shapes checked: what load_pretrained_into does once the weights are read, for a
// caller that reads (and checks) them before it allocates the model.
void assign_pretrained(GPT& model, const NamedTensors& pretrained, const std::string& path);

// A Hugging Face state dict's tensor names for a GPT-2 of `cfg`: each one of GPT-2's parameters
// (with or without "transformer."), lm_head.weight or a causal-mask buffer, and none under both
// of its names; refused in one line before any tensor is read.
void check_hf_keys(const std::vector<std::string>& keys, const GPTConfig& cfg);

// The model pretrained GPT-2 weights at `path` (as load_pretrained_gpt2 takes them) hold, read
// from config.json or llm.c's header alone: its layers, heads, width, positions, GELU form and
// vocabulary rows (the token ids: llm.c's softmax ignores its padded rows, so the model that
// computes llm.c's loss has none), with biases and no dropout; and how many token ids it has.
struct PretrainedGpt2 {
  GPTConfig config;
  int64_t token_ids = 0;
};
PretrainedGpt2 pretrained_gpt2_config(const std::string& path);

// bitgrad's parameters for `cfg` from an llm.c checkpoint (its sizes must be cfg's; its padded
// vocabulary cfg.vocab_size).
NamedTensors gpt_params_from_llmc(const LlmcCheckpoint& ck, const GPTConfig& cfg);
// An llm.c checkpoint of bitgrad's parameters: vocab_size is the tokenizer's, the padded
// vocabulary cfg's rounded up to a multiple of 128 (llm.c's own rule; zero rows); `dtype` f32
// or bf16.
LlmcCheckpoint llmc_from_gpt_params(const NamedTensors& params, const GPTConfig& cfg,
                                    int64_t vocab, DType dtype);

}  // namespace bg
