#include "support/release_checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "models/h3/checkpoint_layout.h"
#include "models/h3_video_vae/checkpoint_naming.h"
#include "support/paths.h"
#include "support/tiny_checkpoint.h"
#include "weights/checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Named = std::vector<std::pair<std::string, Tensor>>;

Json read_json(const fs::path& file) {
  std::ifstream in(file);
  return Json::parse(in);
}

void write_json(const fs::path& file, const Json& j) { std::ofstream(file) << j.dump(2); }

Named read_all(const std::string& path, const std::string& strip_prefix = "") {
  Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(path);
  EXPECT_TRUE(ckpt.has_value()) << ckpt.status().to_string();
  Named out;
  if (!ckpt) return out;
  for (const std::string& name : ckpt->names()) {
    Expected<Tensor> t = ckpt->get(name);
    EXPECT_TRUE(t.has_value()) << name;
    std::string key = name;
    if (key.rfind(strip_prefix, 0) == 0) key = key.substr(strip_prefix.size());
    out.emplace_back(key, t->contiguous().clone());
  }
  return out;
}

// transformer/: the release's config field names and the original-named weights in two shards.
void write_transformer(const fs::path& folder, DType dtype) {
  const fs::path data = test_data_dir();
  fs::create_directories(folder);
  const Json d = read_json(data / "h3_tiny/transformer/config.json");
  Json c = {{"_class_name", "MiniMaxH3DiTModel"}, {"_diffusers_version", "0.32.2"}};
  const std::pair<const char*, const char*> names[] = {
      {"hidden_size", "hidden_size"}, {"num_layers", "num_layers"}, {"token_refiner_num_layers", "num_refiner_layers"},
      {"num_attention_heads", "num_attention_heads"}, {"attention_head_dim", "attention_head_dim"},
      {"ffn_hidden_size", "ffn_dim"}, {"latents_dim", "in_channels"}, {"audio_latents_dim", "audio_in_channels"},
      {"patch_size", "patch_size"}, {"text_dim", "text_dim"}, {"timestep_input_dim", "freq_dim"},
      {"time_embed_hidden_size", "time_embed_hidden_dim"}, {"time_embed_dim", "time_embed_dim"},
      {"rope_inv_freq_len", "rope_freq_dim"}, {"norm_eps", "norm_eps"}, {"qk_norm_eps", "qk_norm_eps"},
      {"final_norm_eps", "final_norm_eps"}};
  for (const auto& [release, diffusers] : names) c[release] = d.at(diffusers);
  c["adaln_out_features"] = 18 * d.at("hidden_size").get<int64_t>();
  c["final_adaln_out_features"] = 2 * d.at("hidden_size").get<int64_t>();
  ASSERT_EQ(d.value("rope_theta", 10000.0), 10000.0);  // the release leaves it out: the default
  write_json(folder / "config.json", c);

  Named tensors = read_all((data / "h3_tiny/transformer_original/model.safetensors").string(), "model.diffusion_model.");
  ASSERT_FALSE(tensors.empty());
  for (auto& [name, t] : tensors) t = t.to(dtype);
  const size_t half = tensors.size() / 2;
  const std::string shard[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
  Json index = {{"metadata", Json::object()}, {"weight_map", Json::object()}};
  for (int s = 0; s < 2; ++s) {
    const Named part(tensors.begin() + (s ? half : 0), s ? tensors.end() : tensors.begin() + half);
    for (const auto& [name, t] : part) index["weight_map"][name] = shard[s];
    ASSERT_TRUE(weights::write_safetensors((folder / shard[s]).string(), part).is_ok());
  }
  write_json(folder / "model.safetensors.index.json", index);
}

// video_vae/: h3_fl2va's diffusers VAE as the release keeps it: the wrapper, source/config.json and
// the original names (one per-head interleaved to_qkv with its bias, ff.w1 [gate; up], ...).
void write_video_vae(const fs::path& folder) {
  const fs::path data = test_data_dir();
  fs::create_directories(folder / "source");
  const Json d = read_json(data / "h3_fl2va/vae/config.json");
  const Json wrapper = {{"_class_name", "MiniMaxH3VideoVAE"},
                        {"source_path", "source"},
                        {"source_class_name", "AutoencoderKLLegacy"},
                        {"vae_clip_length", d.at("clip_length")},
                        {"vae_token_drop", d.at("token_drop")},
                        {"vae_tile_size", 256},
                        {"vae_tile_overlap_min", 64},
                        {"source_safetensors_path", "model.safetensors"},
                        {"latent_channels", d.at("latent_channels")},
                        {"latents_mean", d.at("latents_mean")},
                        {"latents_std", d.at("latents_std")}};
  write_json(folder / "config.json", wrapper);
  const std::vector<int64_t> blocks = d.at("block_out_channels").get<std::vector<int64_t>>();
  std::vector<int64_t> mult;
  for (int64_t b : blocks) mult.push_back(b / blocks.front());
  const int64_t heads = d.at("decoder_num_attention_heads").get<int64_t>();
  const int64_t head_dim = d.at("decoder_attention_head_dim").get<int64_t>();
  const Json source = {
      {"_class_name", "AutoencoderKLLegacy"}, {"causal_decoder", false}, {"causal_encoder", true},
      {"ch", blocks.front()}, {"ch_mult", mult}, {"embed_dim", d.at("latent_channels")},
      {"z_channels", d.at("latent_channels")}, {"in_channels", d.at("in_channels")}, {"out_ch", d.at("out_channels")},
      {"num_res_blocks", d.at("layers_per_block")}, {"padding_mode", d.at("spatial_padding_mode")},
      {"pixel_norm_type", "imagenet"}, {"space_down", d.at("spatial_downsample_factors")},
      {"time_down", d.at("temporal_downsample_factors")}, {"use_3d_conv", true}, {"use_t_isolated_gn", true},
      {"use_vit_decoder", true},
      // What the release's code fixes (GroupNorm 32, eps 1e-6, FFN x4) the tiny model states.
      {"norm_num_groups", d.at("norm_num_groups")}, {"norm_eps", d.at("norm_eps")},
      {"vit_decoder_kwargs",
       {{"dim_head", head_dim}, {"heads", heads}, {"num_layers", d.at("decoder_num_layers")},
        {"ffn_activation_fn", "silu"}, {"ffn_use_gated", true}, {"norm_type", "rms_norm"}, {"norm_affine", true},
        {"qk_norm_type", "rms_norm"}, {"qk_norm_affine", false}, {"rope_dim_ratio", d.at("decoder_rope_dim_ratio")},
        {"rope_theta", d.at("decoder_rope_theta")}, {"eps", d.at("decoder_norm_eps")},
        {"num_register_tokens", d.at("decoder_num_register_tokens")}, {"ffn_mult", d.at("decoder_ffn_mult")}}}};
  write_json(folder / "source" / "config.json", source);

  const Named diffusers = read_all((data / "h3_fl2va/vae").string());
  std::map<std::string, std::array<Tensor, 3>> qkv;  // original key -> q, k, v
  Named out;
  for (const auto& [name, t] : diffusers) {
    if (name == "latents_mean" || name == "latents_std") continue;
    const std::string key = h3vae::original_key(name);
    int part = -1;
    for (int p = 0; p < 3; ++p)
      if (name.find(std::string(".attn.to_") + "qkv"[p] + ".") != std::string::npos) part = p;
    if (part >= 0) {
      qkv[key][part] = t;
    } else if (name.find("ff.net.0.proj") != std::string::npos) {
      out.emplace_back(key, h3::swap_row_halves(t));  // diffusers [value; gate] -> the release's [gate; up]
    } else {
      out.emplace_back(key, t);
    }
  }
  for (const auto& [key, parts] : qkv) {  // rows [h: q, k, v] x heads, each head_dim rows
    Shape shape = parts[0].shape();
    shape[0] *= 3;
    Tensor fused = Tensor::uninitialized(shape, parts[0].dtype());
    const size_t block = parts[0].nbytes() / static_cast<size_t>(heads);
    for (int64_t h = 0; h < heads; ++h)
      for (int p = 0; p < 3; ++p)
        std::memcpy(static_cast<char*>(fused.raw_data()) + (h * 3 + p) * block,
                    static_cast<const char*>(parts[p].raw_data()) + h * block, block);
    out.emplace_back(key, fused);
  }
  ASSERT_TRUE(weights::write_safetensors((folder / "source" / "model.safetensors").string(), out).is_ok());
}

// audio_vae/: the release's config.json, metadata.json kwargs, and the same weight names as diffusers'.
void write_audio_vae(const fs::path& folder) {
  const fs::path data = test_data_dir();
  fs::create_directories(folder);
  const Json d = read_json(data / "h3_fl2va/audio_vae/config.json");
  write_json(folder / "config.json", {{"_class_name", "MiniMaxH3AudioVAE"},
                                      {"output_channel", 2},
                                      {"sample_rate", d.at("sampling_rate")},
                                      {"source_config_path", "config.yaml"},
                                      {"source_safetensors_path", "model.safetensors"},
                                      {"source_metadata_path", "metadata.json"},
                                      {"latent_channels", d.at("latent_channels")},
                                      {"latents_mean", d.at("latents_mean")},
                                      {"latents_std", d.at("latents_std")}});
  write_json(folder / "metadata.json",
             {{"metadata",
               {{"kwargs",
                 {{"attn_proj", true}, {"decoder_dim", d.at("decoder_dim")}, {"decoder_rates", d.at("decoder_rates")},
                  {"decoder_type", "bigvgan"}, {"encoder_dim", d.at("encoder_dim")},
                  {"encoder_rates", d.at("encoder_rates")}, {"latent_dim", d.at("latent_dim")},
                  {"sample_rate", d.at("sampling_rate")}, {"vae_latent_channels", d.at("latent_channels")},
                  // What the release's code fixes for 32 kHz the tiny model states.
                  {"decoder_kernel_sizes", d.at("decoder_kernel_sizes")},
                  {"resblock_kernel_sizes", d.at("resblock_kernel_sizes")},
                  {"resblock_dilation_sizes", d.at("resblock_dilation_sizes")},
                  {"num_attention_heads", d.at("num_attention_heads")}}}}}});
  fs::create_symlink(data / "h3_fl2va/audio_vae/diffusion_pytorch_model.safetensors", folder / "model.safetensors");
}

void write_release_folder(const fs::path& folder, const std::string& partition) {
  const fs::path data = test_data_dir();
  fs::create_directories(folder);
  write_json(folder / "model_index.json",
             {{"_class_name", "MiniMaxH3Pipeline"},
              {"transformer", {"diffusers", "MiniMaxH3DiTModel"}},
              {"video_vae", {"diffusers", "MiniMaxH3VideoVAE"}},
              {"audio_vae", {"diffusers", "MiniMaxH3AudioVAE"}},
              {"scheduler", nullptr},
              {"_minimax_h3",
               {{"schema_version", 1},
                {"partition", partition},
                {"tasks", partition == "fl2va" ? Json{"t2va", "fl2va"} : Json{"ref2va"}},
                {"sigma_shift_scales", {{"video", 12.0}, {"audio", 3.0}}}}}});
  write_transformer(folder / "transformer", partition == "fl2va" ? DType::kF32 : DType::kBF16);
  write_video_vae(folder / "video_vae");
  write_audio_vae(folder / "audio_vae");
  fs::create_directory_symlink(data / "tokenizer/qwen_bpe", folder / "tokenizer");
  fs::create_directory_symlink(data / "h3_fl2va_prompt/text_encoder", folder / "text_encoder");
  fs::create_directory_symlink(data / "h3_fl2va_prompt/processor", folder / "processor");
}

}  // namespace

void assemble_tiny_release(const fs::path& root, ReleaseFolders folders) {
  fs::create_directories(root);
  if (folders.fl2va) write_release_folder(root / "FL2VA", "fl2va");
  if (folders.ref2va) write_release_folder(root / "Ref2VA", "ref2va");
}

}  // namespace orochi::testing
