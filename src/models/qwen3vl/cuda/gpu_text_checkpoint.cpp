// GpuTextEncoder::write_checkpoint: the loaded weights as a bare Qwen3VLTextModel folder, so the
// load path (page-cached safetensors -> GPU) can be timed and checked on the exact weights a
// random-init run used. One file per layer keeps each write small and the folder sharded like a
// release.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "weights/safetensors_writer.h"

namespace orochi::qwen3vl::gpu {
namespace {

nlohmann::json config_json(const TextConfig& c) {
  return {{"model_type", "qwen3_vl_text"},
          {"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden_size},
          {"intermediate_size", c.intermediate_size},
          {"num_hidden_layers", c.num_hidden_layers},
          {"num_attention_heads", c.num_attention_heads},
          {"num_key_value_heads", c.num_key_value_heads},
          {"head_dim", c.head_dim},
          {"rms_norm_eps", c.rms_norm_eps},
          {"max_position_embeddings", c.max_position_embeddings},
          {"hidden_act", "silu"},
          {"attention_bias", false},
          {"tie_word_embeddings", c.tie_word_embeddings},
          {"torch_dtype", "bfloat16"},
          {"rope_scaling",
           {{"rope_type", "default"}, {"rope_theta", c.rope_theta}, {"mrope_section", c.mrope_section},
            {"mrope_interleaved", true}}}};
}

Status write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  f.close();
  if (!f) return io_error("could not write " + path.string());
  return Status::ok();
}

}  // namespace

Status GpuTextEncoder::write_checkpoint(const std::string& folder) const {
  if (!has_weights_) return Status(ErrorCode::kInternal, "write_checkpoint before upload() or init_random()");
  if (precision_ != Precision::kBf16)
    return unsupported(std::string("writing a checkpoint needs bf16 weights; this encoder holds its linears in ") +
                       precision_name(precision_) + " (create it at bf16)");
  if (streaming_.any())
    return unsupported("writing a checkpoint needs every layer resident; create the encoder without streaming");
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) return io_error("could not create " + folder + ": " + ec.message());
  const std::filesystem::path dir(folder);
  nlohmann::json weight_map = nlohmann::json::object();
  uint64_t total = 0;
  auto write_file = [&](const std::string& name, const std::vector<std::pair<std::string, Tensor>>& tensors) {
    for (const auto& [key, t] : tensors) {
      weight_map[key] = name;
      total += t.nbytes();
    }
    return weights::write_safetensors((dir / name).string(), tensors, {{"format", "pt"}});
  };
  OROCHI_RETURN_IF_ERROR(write_file("embed_tokens.safetensors", {{"embed_tokens.weight", embed_tokens_}}));
  for (int64_t i = 0; i < layers_; ++i) {
    OROCHI_ASSIGN_OR_RETURN(auto tensors, download_layer(layer_weights_[static_cast<size_t>(i)],
                                                         "layers." + std::to_string(i) + ".",
                                                         config_.intermediate_size, stream_));
    char name[48];
    std::snprintf(name, sizeof name, "layers-%05lld.safetensors", static_cast<long long>(i));
    OROCHI_RETURN_IF_ERROR(write_file(name, tensors));
  }
  OROCHI_RETURN_IF_ERROR(write_json(dir / "model.safetensors.index.json",
                                    {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}));
  return write_json(dir / "config.json", config_json(config_));
}

}  // namespace orochi::qwen3vl::gpu
