// Model parts as single files, as ComfyUI keeps them (issue 24): tests/data/h3_comfy_components
// (scripts/golden/make_h3_comfy_components.py, which checks the ComfyUI reading of each tensor
// against the diffusers modules) loads to the weights of the diffusers folders it was made from:
// the video VAE in the original naming, the audio VAE with its weight norm folded, the Qwen3-VL text
// encoder under model. / visual. truncated after layer 3. Configs come from a config.json beside
// the file, else the released ones (refused here: the files are tiny), the latents' statistics from
// the file when the config has none. Bad files are refused naming the file, a key and the config.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "models/h3_audio_vae/encoder_weights.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/encoder_weights.h"
#include "models/h3_video_vae/weights.h"
#include "models/qwen3vl/text_weights.h"
#include "pipeline/prompt_features.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/model_export.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "weights/checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;

std::string data(const std::string& rel) { return testing::test_data_dir() + "/" + rel; }
std::string comfy(const std::string& file) { return data("h3_comfy_components/" + file); }
bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.dtype() == y.dtype() && x.shape() == y.shape() && std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

// `file` copied into a fresh folder, with `config` (a JSON object, or nothing) as config.json beside it.
std::string beside(const testing::TempDir& dir, const std::string& sub, const std::string& file,
                   const std::optional<nlohmann::json>& config) {
  const fs::path folder = dir.path / sub;
  fs::create_directories(folder);
  fs::copy_file(file, folder / fs::path(file).filename(), fs::copy_options::overwrite_existing);
  if (config) testing::write_json((folder / "config.json").string(), *config);
  return (folder / fs::path(file).filename()).string();
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(std::ifstream(path)); }

// Every tensor of a video VAE encoder, in a fixed order.
std::vector<Tensor> encoder_tensors(const h3vae::EncoderWeights& w) {
  std::vector<Tensor> out = {w.conv_in.weight, w.conv_in.bias};
  for (const h3vae::EncoderLevelWeights& level : w.levels) {
    for (const h3vae::EncoderResnetWeights& r : level.resnets)
      for (const Tensor& t : {r.norm1.weight, r.norm1.bias, r.conv1.weight, r.conv1.bias, r.norm2.weight, r.norm2.bias,
                              r.conv2.weight, r.conv2.bias, r.shortcut.weight, r.shortcut.bias})
        out.push_back(t);
    out.push_back(level.downsample.weight);
    out.push_back(level.downsample.bias);
  }
  for (const Tensor& t : {w.norm_out.weight, w.norm_out.bias, w.conv_out.weight, w.conv_out.bias, w.quant_conv.weight,
                          w.quant_conv.bias})
    out.push_back(t);
  return out;
}

TEST(VideoVaeFile, ComfyUIsOriginalNamesLoadToTheFoldersWeights) {
  const std::string folder = data("h3_video_vae_encoder/vae");
  testing::TempDir dir("vae_file");
  const std::string file = beside(dir, "with_config", comfy("vae.safetensors"), read_json(folder + "/config.json"));
  Expected<h3vae::VaeComponent> vae = h3vae::open_video_vae(file);
  ASSERT_TRUE(vae.has_value()) << vae.status().to_string();
  EXPECT_EQ(vae->naming, h3vae::VaeNaming::kOriginal);
  Expected<h3vae::DecoderWeights> from_file = h3vae::load_decoder_weights(*vae);
  Expected<h3vae::DecoderWeights> from_folder = h3vae::load_decoder_weights(folder);
  ASSERT_TRUE(from_file.has_value()) << from_file.status().to_string();
  ASSERT_TRUE(from_folder.has_value()) << from_folder.status().to_string();
  const testing::NamedTensors a = testing::comfy_video_decoder_tensors(*from_file);
  const testing::NamedTensors b = testing::comfy_video_decoder_tensors(*from_folder);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(same_bytes(t, b.at(name))) << name;
  EXPECT_EQ(from_file->config.latents_mean, from_folder->config.latents_mean);

  Expected<h3vae::EncoderWeights> enc_file = h3vae::load_encoder_weights(file);
  Expected<h3vae::EncoderWeights> enc_folder = h3vae::load_encoder_weights(folder);
  ASSERT_TRUE(enc_file.has_value()) << enc_file.status().to_string();
  ASSERT_TRUE(enc_folder.has_value()) << enc_folder.status().to_string();
  const std::vector<Tensor> x = encoder_tensors(*enc_file), y = encoder_tensors(*enc_folder);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(same_bytes(x[i], y[i])) << "encoder tensor " << i;

  // A config.json without latents: they come from the file.
  nlohmann::json no_latents = read_json(folder + "/config.json");
  no_latents.erase("latents_mean");
  no_latents.erase("latents_std");
  Expected<h3vae::VaeComponent> latents = h3vae::open_video_vae(beside(dir, "no_latents", comfy("vae.safetensors"), no_latents));
  ASSERT_TRUE(latents.has_value()) << latents.status().to_string();
  EXPECT_EQ(latents->config.latents_mean, from_folder->config.latents_mean);
  EXPECT_EQ(latents->config.latents_std, from_folder->config.latents_std);

  // The folder's tensors as one diffusers-named file load the same.
  Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(folder);
  ASSERT_TRUE(ckpt.has_value());
  testing::NamedTensors diffusers;
  for (const std::string& name : ckpt->names()) diffusers[name] = *ckpt->get(name);
  const std::string one = testing::write_tensors((dir.path / "diffusers.safetensors").string(), diffusers);
  testing::write_json((dir.path / "config.json").string(), read_json(folder + "/config.json"));
  Expected<h3vae::VaeComponent> d = h3vae::open_video_vae(one);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->naming, h3vae::VaeNaming::kDiffusers);
  Expected<h3vae::DecoderWeights> from_one = h3vae::load_decoder_weights(*d);
  ASSERT_TRUE(from_one.has_value()) << from_one.status().to_string();
  for (const auto& [name, t] : testing::comfy_video_decoder_tensors(*from_one)) EXPECT_TRUE(same_bytes(t, b.at(name))) << name;
}

TEST(VideoVaeFile, RefusesWhatItCannotRead) {
  const std::string folder = data("h3_video_vae_encoder/vae");
  testing::TempDir dir("vae_file_bad");
  // No config beside the tiny file: the released config, whose shapes it does not have.
  Status s = h3vae::load_decoder_weights(beside(dir, "alone", comfy("vae.safetensors"), std::nullopt)).status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
  EXPECT_TRUE(mentions(s, "latents_mean") && mentions(s, "the released video VAE config")) << s.to_string();
  // A config whose latents differ from the file's: not its config.
  nlohmann::json other = read_json(folder + "/config.json");
  other["latents_mean"][0] = other["latents_mean"][0].get<double>() + 1.0;
  s = h3vae::open_video_vae(beside(dir, "other", comfy("vae.safetensors"), other)).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "differ from those of the config.json")) << s.to_string();
  // A file without latents and no config giving them.
  Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(comfy("vae.safetensors"));
  testing::NamedTensors t;
  for (const std::string& name : ckpt->names())
    if (name != "latents_mean" && name != "latents_std") t[name] = *ckpt->get(name);
  nlohmann::json no_latents = read_json(folder + "/config.json");
  no_latents.erase("latents_mean");
  no_latents.erase("latents_std");
  fs::create_directories(dir.path / "bare");
  testing::write_json((dir.path / "bare/config.json").string(), no_latents);
  s = h3vae::open_video_vae(testing::write_tensors((dir.path / "bare/vae.safetensors").string(), t)).status();
  EXPECT_TRUE(mentions(s, "cannot be guessed")) << s.to_string();
  // A missing fused qkv is named in the original naming.
  t.erase("decoder.transformer_blocks.0.attn.to_qkv.bias");
  t["latents_mean"] = *ckpt->get("latents_mean");
  t["latents_std"] = *ckpt->get("latents_std");
  s = h3vae::load_decoder_weights(testing::write_tensors((dir.path / "bare/vae.safetensors").string(), t)).status();
  EXPECT_TRUE(mentions(s, "decoder.transformer_blocks.0.attn.to_qkv.bias") && mentions(s, "original")) << s.to_string();
  // Not a video VAE at all: the keys are shown.
  s = h3vae::open_video_vae(comfy("text_encoder.safetensors")).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "not a MiniMax-H3 video VAE") && mentions(s, "model.embed_tokens.weight")) << s.to_string();
  EXPECT_EQ(h3vae::open_video_vae("/nonexistent/vae.safetensors").status().code(), ErrorCode::kNotFound);
}

TEST(AudioVaeFile, ComfyUIsFoldedWeightsLoadToTheFoldersWeights) {
  const std::string folder = data("h3_audio_vae_encoder/audio_vae");
  testing::TempDir dir("audio_file");
  nlohmann::json config = read_json(folder + "/config.json");
  config.erase("latents_mean");  // from the file
  config.erase("latents_std");
  const std::string file = beside(dir, "a", comfy("audio_vae.safetensors"), config);
  Expected<h3_audio::AudioVaeComponent> vae = h3_audio::open_audio_vae(file);
  ASSERT_TRUE(vae.has_value()) << vae.status().to_string();
  EXPECT_EQ(vae->naming, h3_audio::AudioVaeNaming::kFolded);
  Expected<h3_audio::AudioDecoderWeights> from_file = h3_audio::load_decoder(*vae);
  Expected<h3_audio::AudioDecoderWeights> from_folder = h3_audio::load_decoder(folder);
  ASSERT_TRUE(from_file.has_value()) << from_file.status().to_string();
  ASSERT_TRUE(from_folder.has_value()) << from_folder.status().to_string();
  EXPECT_EQ(from_file->config.latents_mean, from_folder->config.latents_mean);
  // torch folds g·v/‖v‖ with its own norm; ours may differ in the last bit.
  const testing::NamedTensors a = testing::comfy_audio_decoder_tensors(*from_file);
  const testing::NamedTensors b = testing::comfy_audio_decoder_tensors(*from_folder);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TENSOR_CLOSE(t, b.at(name), 1e-6);

  Expected<h3_audio::AudioEncoderWeights> enc_file = h3_audio::load_encoder(file);
  Expected<h3_audio::AudioEncoderWeights> enc_folder = h3_audio::load_encoder(folder);
  ASSERT_TRUE(enc_file.has_value()) << enc_file.status().to_string();
  ASSERT_TRUE(enc_folder.has_value()) << enc_folder.status().to_string();
  EXPECT_TENSOR_CLOSE(enc_file->conv_in.weight, enc_folder->conv_in.weight, 1e-6);
  EXPECT_TENSOR_CLOSE(enc_file->conv_out.weight, enc_folder->conv_out.weight, 1e-6);
  EXPECT_TENSOR_CLOSE(enc_file->blocks.back().down.weight, enc_folder->blocks.back().down.weight, 1e-6);
  EXPECT_TRUE(same_bytes(enc_file->pre_block.qkv_weight.to(DType::kF32), enc_folder->pre_block.qkv_weight.to(DType::kF32)));

  // Alone, the tiny file meets the released config and is refused naming a key.
  const Status s = h3_audio::load_decoder(beside(dir, "alone", comfy("audio_vae.safetensors"), std::nullopt)).status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch) << s.to_string();
  EXPECT_TRUE(mentions(s, "the released audio VAE config")) << s.to_string();
  const Status other = h3_audio::open_audio_vae(comfy("vae.safetensors")).status();
  EXPECT_TRUE(mentions(other, "not a MiniMax-H3 audio VAE") && mentions(other, "decoder.")) << other.to_string();
}

TEST(TextEncoderFile, ComfyUIsTruncatedFileEncodesAsTheFolder) {
  const std::string folder = data("qwen3vl_text/text_encoder");
  testing::TempDir dir("text_file");
  const std::string file = beside(dir, "t", comfy("text_encoder.safetensors"), read_json(folder + "/config.json"));
  Expected<qwen3vl::TextComponent> c = qwen3vl::text_encoder_component(file);
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_TRUE(c->single_file);
  EXPECT_EQ(c->file_layers, 3);  // truncated after the conditioning layer
  Expected<qwen3vl::TextWeights> from_file = qwen3vl::load_text_weights(file, 3);
  Expected<qwen3vl::TextWeights> from_folder = qwen3vl::load_text_weights(folder, 3);
  ASSERT_TRUE(from_file.has_value()) << from_file.status().to_string();
  ASSERT_TRUE(from_folder.has_value()) << from_folder.status().to_string();
  EXPECT_EQ(from_file->prefix, "model.");
  EXPECT_TRUE(same_bytes(from_file->embed_tokens, from_folder->embed_tokens));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_bytes(from_file->layers[i].q_proj, from_folder->layers[i].q_proj)) << i;
    EXPECT_TRUE(same_bytes(from_file->layers[i].down_proj, from_folder->layers[i].down_proj)) << i;
  }
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data("qwen3vl_text/golden.safetensors"));
  ASSERT_TRUE(g.has_value());
  Expected<Tensor> out = pipeline::encode_prompt_cpu(file, testing::golden_tensor(*g, "in.input_ids"), 3);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_TENSOR_CLOSE(*out, testing::golden_tensor(*g, "hidden_states.3"), 1e-5);

  // Two layers in the file cannot give the residual after layer 3.
  Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(file);
  testing::NamedTensors two;
  for (const std::string& name : ckpt->names())
    if (name.find("layers.2.") == std::string::npos) two[name] = *ckpt->get(name);
  const std::string short_file = testing::write_tensors((dir.path / "t" / "short.safetensors").string(), two);
  Status s = pipeline::check_text_encoder(short_file, 3);
  EXPECT_TRUE(mentions(s, "holds 2 decoder layers")) << s.to_string();
  // Alone: the released Qwen3-VL-32B config, whose shapes the tiny file does not have.
  s = qwen3vl::load_text_weights(beside(dir, "alone", comfy("text_encoder.safetensors"), std::nullopt), 3).status();
  EXPECT_FALSE(s.is_ok());
  EXPECT_TRUE(mentions(s, "the released Qwen3-VL-32B config") && mentions(s, "embed_tokens")) << s.to_string();
  s = qwen3vl::load_text_weights(comfy("audio_vae.safetensors"), 3).status();
  EXPECT_TRUE(mentions(s, "not a Qwen3-VL text checkpoint")) << s.to_string();
}

}  // namespace
}  // namespace orochi
