// MODEL_DIR as the original release (HF MiniMaxAI/MiniMax-H3, MODELS_H3.md §7): the root holding
// FL2VA/ and Ref2VA/, or either folder alone (h3::model_folder_parts). The tiny checkpoint written in
// the release's layout at test time (support/release_checkpoint.h: original names, per-head
// interleaved qkv, fc1 [gate; value], sharded transformer, video_vae/ wrapper + source/, audio_vae/
// metadata.json) runs t2va and ref2va to the same frames as the diffusers-layout tiny checkpoint.
// The release's own config files (MiniMax-AI/MiniMax-H3 @8d8824e, FL2VA/) read to the released
// configs. Refusals name the missing part and the folder to pass.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/engine.h"
#include "io/media_in.h"
#include "models/h3/config.h"
#include "models/h3/model_folder_parts.h"
#include "models/h3_audio_vae/release_folder.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/release_folder.h"
#include "models/h3_video_vae/weights.h"
#include "planner/plan_request.h"
#include "support/paths.h"
#include "support/release_checkpoint.h"
#include "support/temp_dir.h"
#include "support/tiny_checkpoint.h"

namespace orochi::engine {
namespace {

namespace fs = std::filesystem;
using Kind = ReferenceInput::Kind;

std::string data(const std::string& path) { return testing::test_data_dir() + "/" + path; }

GenerateRequest request(std::vector<ReferenceInput> refs = {}) {
  GenerateRequest r;
  r.prompt = "A red fox runs through fresh snow, wind in the pines.";
  r.text_layer = testing::kTinyTextLayer;
  r.width = 128;
  r.height = 96;
  r.frames = 124;
  r.steps = 2;
  r.seed = 11;
  r.ref_size = RefSize::kMatch;
  r.references = std::move(refs);
  return r;
}

std::unique_ptr<Engine> open_engine(const fs::path& root) {
  Expected<std::unique_ptr<Engine>> e = Engine::open(ModelSource{.dir = root.string()}, EngineOptions{.device = "cpu"});
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  return e ? std::move(e).value() : nullptr;
}

Expected<RunResult> run(Engine& engine, const GenerateRequest& r) {
  OROCHI_ASSIGN_OR_RETURN(const RunPlan plan, engine.plan(r));
  return engine.run(plan);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0;
}

bool has(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

TEST(ReleaseLayout, TellsTheLayoutFromTheFiles) {
  testing::TempDir dir("release_parts");
  testing::assemble_tiny_release(dir.path / "H3");
  Expected<h3::FolderParts> root = h3::model_folder_parts((dir.path / "H3").string());
  ASSERT_TRUE(root.has_value()) << root.status().to_string();
  EXPECT_EQ(root->layout, h3::FolderLayout::kReleaseRoot);
  EXPECT_EQ(root->transformer, (dir.path / "H3/FL2VA/transformer").string());
  EXPECT_EQ(root->transformer_ref, (dir.path / "H3/Ref2VA/transformer").string());
  EXPECT_EQ(root->vae, (dir.path / "H3/FL2VA/video_vae").string());
  EXPECT_EQ(root->processor, (dir.path / "H3/FL2VA/processor").string());
  Expected<h3::FolderParts> ref = h3::model_folder_parts((dir.path / "H3/Ref2VA").string());
  ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
  EXPECT_EQ(ref->layout, h3::FolderLayout::kReleaseRef2va);
  EXPECT_TRUE(ref->transformer.empty());
  EXPECT_EQ(ref->opening_partition(), "transformer_ref");
  // A folder merely named FL2VA is not a release folder: its model_index.json decides.
  fs::create_directories(dir.path / "plain/FL2VA");
  Expected<h3::FolderParts> plain = h3::model_folder_parts((dir.path / "plain").string());
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->layout, h3::FolderLayout::kDiffusers);
}

// The release's own config files (MiniMax-AI/MiniMax-H3 @8d8824e FL2VA/: transformer/config.json,
// video_vae/config.json + source/config.json, audio_vae/config.json + metadata.json; latents cut to
// their first values, which are not compared) read to the released configs.
TEST(ReleaseLayout, TheReleasesConfigFilesReadAsTheReleasedModel) {
  const nlohmann::json transformer = nlohmann::json::parse(R"({
    "_class_name": "MiniMaxH3DiTModel", "_diffusers_version": "0.32.2", "hidden_size": 5376, "num_layers": 50,
    "token_refiner_num_layers": 2, "num_attention_heads": 56, "attention_head_dim": 128, "ffn_hidden_size": 14336,
    "latents_dim": 24, "audio_latents_dim": 32, "patch_size": [1, 2, 2], "text_dim": 5120,
    "timestep_input_dim": 256, "time_embed_hidden_size": 5376, "time_embed_dim": 2688,
    "adaln_out_features": 96768, "final_adaln_out_features": 10752, "rope_inv_freq_len": 16,
    "norm_eps": 1e-05, "qk_norm_eps": 1e-05, "final_norm_eps": 1e-05})");
  Expected<h3::H3Config> t = h3::H3Config::from_json(transformer);
  ASSERT_TRUE(t.has_value()) << t.status().to_string();
  EXPECT_EQ(t->summary(), h3::H3Config{}.summary());
  EXPECT_EQ(t->num_refiner_layers, 2);
  EXPECT_EQ(t->ffn_dim, 14336);
  nlohmann::json wrong = transformer;
  wrong["ffn_dim"] = 1024;  // both names, disagreeing
  EXPECT_FALSE(h3::H3Config::from_json(wrong).has_value());
  wrong = transformer;
  wrong["adaln_out_features"] = 1234;
  EXPECT_FALSE(h3::H3Config::from_json(wrong).has_value());

  testing::TempDir dir("release_configs");
  std::vector<float> mean(24, 0.25f), std_(24, 1.5f);
  nlohmann::json wrapper = nlohmann::json::parse(R"({
    "_class_name": "MiniMaxH3VideoVAE", "mode": "standalone", "source_path": "source",
    "source_class_name": "AutoencoderKLLegacy", "vae_clip_length": 17, "vae_token_drop": 3, "vae_encoder_tiling": 1,
    "vae_decoder_tiling": 1, "vae_parallel_tiling": 1, "vae_tile_size": 256, "vae_tile_overlap_min": 64,
    "vae_encoder_parallel": 0, "vae_decoder_parallel": 0, "vae_chunk_dim": -1,
    "source_safetensors_path": "model.safetensors", "latent_channels": 24})");
  wrapper["latents_mean"] = mean;
  wrapper["latents_std"] = std_;
  write(dir.path / "video_vae/config.json", wrapper.dump());
  write(dir.path / "video_vae/source/config.json", R"({
    "_class_name": "AutoencoderKLLegacy", "causal_decoder": false, "causal_encoder": true, "ch": 128,
    "ch_mult": [1, 2, 2, 4, 4, 8], "embed_dim": 24, "in_channels": 3, "num_res_blocks": 2,
    "num_res_blocks_decoder": null, "out_ch": 3, "padding_mode": "reflect", "padding_mode_t": null,
    "pixel_norm_type": "imagenet", "scaling_factor": 1.0, "shift_factor": 0.0, "space_down": [2, 2, 2, 2, 1, 1],
    "space_up": [1, 2, 2, 2, 2, 1], "time_down": [1, 2, 2, 1, 1, 1], "time_up": null, "use_3d_conv": true,
    "use_t_isolated_gn": true, "use_vit_decoder": true, "vae_ratio": 16, "vae_ratio_t": 4,
    "vit_decoder_kwargs": {"dim_head": 64, "ffn_activation_fn": "silu", "ffn_use_gated": true, "heads": 32,
      "norm_affine": true, "norm_type": "rms_norm", "num_layers": 36, "qk_norm_affine": false,
      "qk_norm_type": "rms_norm", "rope_dim_ratio": 0.75, "rope_theta": 100.0},
    "z_channels": 24, "zq_ch_decoder": null, "zq_ch_encoder": null})");
  const std::string vae_folder = (dir.path / "video_vae").string();
  ASSERT_TRUE(h3vae::is_release_vae_folder(vae_folder));
  Expected<h3vae::ReleaseVaeFolder> vae = h3vae::read_release_vae_folder(vae_folder);
  ASSERT_TRUE(vae.has_value()) << vae.status().to_string();
  Expected<h3vae::VideoVaeConfig> v = h3vae::VideoVaeConfig::from_json(vae->config);
  ASSERT_TRUE(v.has_value()) << v.status().to_string();
  const h3vae::VideoVaeConfig released;
  EXPECT_EQ(v->summary(), released.summary());
  EXPECT_EQ(v->block_out_channels, released.block_out_channels);
  EXPECT_EQ(v->spatial_downsample_factors, released.spatial_downsample_factors);
  EXPECT_EQ(v->temporal_downsample_factors, released.temporal_downsample_factors);
  EXPECT_EQ(v->layers_per_block, released.layers_per_block);
  EXPECT_EQ(v->norm_num_groups, released.norm_num_groups);
  EXPECT_EQ(v->decoder_ffn_mult, released.decoder_ffn_mult);
  EXPECT_EQ(v->decoder_num_register_tokens, released.decoder_num_register_tokens);
  EXPECT_EQ(v->latents_mean, mean);
  // Tiles other than the engine's would decode another video: refused by name.
  wrapper["vae_tile_size"] = 512;
  write(dir.path / "video_vae/config.json", wrapper.dump());
  const Status tiles = h3vae::read_release_vae_folder(vae_folder).status();
  EXPECT_EQ(tiles.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(has(tiles, "vae_tile_size 512")) << tiles.message();

  nlohmann::json audio_config = {{"_class_name", "MiniMaxH3AudioVAE"}, {"output_channel", 2}, {"sample_rate", 32000},
                                 {"source_config_path", "config.yaml"}, {"source_safetensors_path", "model.safetensors"},
                                 {"source_metadata_path", "metadata.json"}, {"latent_channels", 32}};
  audio_config["latents_mean"] = std::vector<float>(32, 0.5f);
  audio_config["latents_std"] = std::vector<float>(32, 2.0f);
  write(dir.path / "audio_vae/config.json", audio_config.dump());
  write(dir.path / "audio_vae/metadata.json", R"({"metadata": {"kwargs": {"attn_proj": true, "decoder_dim": 1024,
    "decoder_rates": [5, 5, 2, 2, 2, 2, 2], "decoder_type": "bigvgan", "encoder_dim": 64, "encoder_rates": [2, 4, 4, 5, 5],
    "latent_dim": 2048, "sample_rate": 32000, "vae_latent_channels": 32}}})");
  const std::string audio_folder = (dir.path / "audio_vae").string();
  ASSERT_TRUE(h3_audio::is_release_audio_vae_folder(audio_folder));
  Expected<h3_audio::ReleaseAudioVaeFolder> audio = h3_audio::read_release_audio_vae_folder(audio_folder);
  ASSERT_TRUE(audio.has_value()) << audio.status().to_string();
  Expected<h3_audio::AudioVaeConfig> a = h3_audio::AudioVaeConfig::from_json(audio->config);
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  const h3_audio::AudioVaeConfig audio_released;
  EXPECT_EQ(a->encoder_rates, audio_released.encoder_rates);
  EXPECT_EQ(a->decoder_rates, audio_released.decoder_rates);
  EXPECT_EQ(a->decoder_kernel_sizes, audio_released.decoder_kernel_sizes);
  EXPECT_EQ(a->latent_dim, audio_released.latent_dim);
  EXPECT_EQ(a->latent_channels, audio_released.latent_channels);
  EXPECT_EQ(a->decoder_dim, audio_released.decoder_dim);
  EXPECT_EQ(a->num_attention_heads, audio_released.num_attention_heads);
  EXPECT_EQ(a->latents_std, std::vector<float>(32, 2.0f));
}

TEST(ReleaseLayout, PlanReadsTheSameConfigsAsTheDiffusersLayout) {
  testing::TempDir dir("release_plan");
  testing::assemble_tiny_checkpoint(dir.path / "diffusers");
  testing::assemble_tiny_release(dir.path / "release");
  Expected<planner::ModelConfigs> d = planner::load_model_configs((dir.path / "diffusers").string());
  Expected<planner::ModelConfigs> r = planner::load_model_configs((dir.path / "release").string());
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->transformer.summary(), d->transformer.summary());
  EXPECT_EQ(r->video_vae.summary(), d->video_vae.summary());
  EXPECT_EQ(r->video_vae.block_out_channels, d->video_vae.block_out_channels);
  EXPECT_EQ(r->video_vae.latents_mean, d->video_vae.latents_mean);
  EXPECT_EQ(r->audio_vae.decoder_kernel_sizes, d->audio_vae.decoder_kernel_sizes);
  EXPECT_EQ(r->audio_vae.latents_std, d->audio_vae.latents_std);
  EXPECT_EQ(r->text_layers, d->text_layers);
  // The same weights, plus the release's rope.inv_freq [rope_freq_dim] f32 buffer (never read).
  EXPECT_GT(r->transformer_host_bytes, 0u);
  EXPECT_EQ(r->transformer_host_bytes - d->transformer_host_bytes, d->transformer.rope_freq_dim * sizeof(float));
}

TEST(ReleaseLayout, T2vaOnTheReleaseRootGivesTheDiffusersLayoutsFrames) {
  testing::TempDir dir("release_t2va");
  testing::assemble_tiny_checkpoint(dir.path / "diffusers");
  testing::assemble_tiny_release(dir.path / "release");
  std::unique_ptr<Engine> diffusers = open_engine(dir.path / "diffusers");
  std::unique_ptr<Engine> release = open_engine(dir.path / "release");
  ASSERT_TRUE(diffusers && release);
  Expected<RunResult> a = run(*diffusers, request());
  Expected<RunResult> b = run(*release, request());
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  EXPECT_EQ(b->report.workflow, "t2va");
  EXPECT_TRUE(same_bits(a->result.frames, b->result.frames));
  EXPECT_TRUE(same_bits(a->result.waveform, b->result.waveform));
}

TEST(ReleaseLayout, Ref2vaRunsOnRef2vaTransformerAsOnTransformerRef) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("release_ref2va");
  testing::assemble_tiny_checkpoint(dir.path / "diffusers", testing::TinyRefPartition::kDistinct);
  testing::assemble_tiny_release(dir.path / "release");
  const std::vector<ReferenceInput> refs = {{Kind::kImage, data("h3_ref2va/image_wide.png")},
                                            {Kind::kVideo, data("h3_ref2va/video.mov")},
                                            {Kind::kAudio, data("h3_ref2va/clip.wav")}};
  for (const fs::path& model : {dir.path / "release", dir.path / "release/Ref2VA"}) {
    std::unique_ptr<Engine> diffusers = open_engine(dir.path / "diffusers");
    std::unique_ptr<Engine> release = open_engine(model);
    ASSERT_TRUE(diffusers && release);
    Expected<RunResult> a = run(*diffusers, request(refs));
    if (!a && has(a.status(), "no audio VAE encoder"))
      GTEST_SKIP() << "the checkpoint's audio VAE encoder is not loaded by the engine yet: " << a.status().to_string();
    Expected<RunResult> b = run(*release, request(refs));
    ASSERT_TRUE(a.has_value()) << a.status().to_string();
    ASSERT_TRUE(b.has_value()) << model << ": " << b.status().to_string();
    EXPECT_EQ(b->report.workflow, "ref2va");
    EXPECT_TRUE(same_bits(a->result.frames, b->result.frames)) << model;
    EXPECT_TRUE(same_bits(a->result.waveform, b->result.waveform)) << model;
  }
}

TEST(ReleaseLayout, RefusalsNameThePartAndTheFolderToPass) {
  testing::TempDir dir("release_refused");
  testing::assemble_tiny_release(dir.path / "release");
  const GenerateRequest t2va = request();
  GenerateRequest ref2va = request({{Kind::kImage, data("h3_ref2va/image_wide.png")}});

  // FL2VA/ alone asked for ref2va, Ref2VA/ alone for t2va: which folder to pass.
  const std::string fl2va = (dir.path / "release/FL2VA").string(), ref = (dir.path / "release/Ref2VA").string();
  if (io::media_input_supported()) {
    const Status s = Engine::check_conditioning(ModelSource{.dir = fl2va}, ref2va);
    EXPECT_EQ(s.code(), ErrorCode::kNotFound);
    EXPECT_TRUE(has(s, "FL2VA/ folder (t2va, fl2va)") && has(s, "Ref2VA/ folder")) << s.message();
  }
  const Status t = Engine::check_conditioning(ModelSource{.dir = ref}, t2va);
  EXPECT_EQ(t.code(), ErrorCode::kNotFound);
  EXPECT_TRUE(has(t, "Ref2VA/ folder (ref2va only)") && has(t, "FL2VA/ folder")) << t.message();
  EXPECT_TRUE(Engine::check_conditioning(ModelSource{.dir = fl2va}, t2va).is_ok());

  // A root with only Ref2VA/: t2va names the missing FL2VA/.
  testing::assemble_tiny_release(dir.path / "ref_only", {.fl2va = false, .ref2va = true});
  const Status r = Engine::check_conditioning(ModelSource{.dir = (dir.path / "ref_only").string()}, t2va);
  EXPECT_EQ(r.code(), ErrorCode::kNotFound);
  EXPECT_TRUE(has(r, "FL2VA/ is missing")) << r.message();

  // A wrapper config without source/model.safetensors.
  const fs::path weights = dir.path / "release/FL2VA/video_vae/source/model.safetensors";
  fs::rename(weights, dir.path / "vae.safetensors");
  const Status w = h3vae::open_video_vae((dir.path / "release/FL2VA/video_vae").string()).status();
  EXPECT_EQ(w.code(), ErrorCode::kNotFound);
  EXPECT_TRUE(has(w, "source/model.safetensors is missing")) << w.message();
  Expected<std::unique_ptr<Engine>> e = Engine::open(ModelSource{.dir = fl2va}, EngineOptions{.device = "cpu"});
  ASSERT_FALSE(e.has_value());
  EXPECT_TRUE(has(e.status(), "source/model.safetensors is missing")) << e.status().message();
  fs::rename(dir.path / "vae.safetensors", weights);

  // The audio VAE without metadata.json; a release folder without transformer/.
  fs::rename(dir.path / "release/FL2VA/audio_vae/metadata.json", dir.path / "metadata.json");
  const Status m = h3_audio::open_audio_vae((dir.path / "release/FL2VA/audio_vae").string()).status();
  EXPECT_EQ(m.code(), ErrorCode::kNotFound);
  EXPECT_TRUE(has(m, "metadata.json is missing")) << m.message();
  fs::rename(dir.path / "release/FL2VA/transformer", dir.path / "transformer");
  const Status p = h3::model_folder_parts((dir.path / "release").string()).status();
  EXPECT_EQ(p.code(), ErrorCode::kNotFound);
  EXPECT_TRUE(has(p, "FL2VA/transformer/config.json is missing")) << p.message();

  // A MiniMaxH3Pipeline index that does not say its partition.
  write(dir.path / "bad/model_index.json", R"({"_class_name": "MiniMaxH3Pipeline"})");
  const Status b = h3::model_folder_parts((dir.path / "bad").string()).status();
  EXPECT_EQ(b.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(has(b, "_minimax_h3.partition")) << b.message();
}

}  // namespace
}  // namespace orochi::engine
