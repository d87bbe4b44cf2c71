// Models made of parts (engine/model_components.h): the demo model with its VAEs as ComfyUI-named
// files (config.json beside each, latents from the files) generates exactly the built-in demo; a
// ComfyUI models/ tree holding the demo's parts (among other files) is found by the files' keys and
// generates exactly the demo with the same text features; and what cannot be told apart or is
// missing is refused naming the files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/random.h"
#include "engine/engine.h"
#include "engine/model_components.h"
#include "io/media_in.h"
#include "support/demo_request.h"
#include "support/model_export.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;

bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0;
}

Expected<engine::RunResult> run(const engine::ModelSource& source, const engine::GenerateRequest& request) {
  OROCHI_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> e, engine::Engine::open(source, engine::EngineOptions{}));
  OROCHI_ASSIGN_OR_RETURN(engine::RunPlan plan, e->plan(request));
  return e->run(plan);
}

// The demo's parts written as ComfyUI keeps them, each in `root`/`where` with its config.json.
struct DemoFiles {
  std::string transformer, vae, audio_vae;
};
DemoFiles write_demo_parts(const fs::path& root, const std::string& transformer_dir, const std::string& vae_dir,
                           const std::string& audio_dir) {
  const pipeline::T2vaModels demo = pipeline::demo_t2va_models(engine::kDemoWeightSeed);
  DemoFiles f;
  for (const std::string& d : {transformer_dir, vae_dir, audio_dir}) fs::create_directories(root / d);
  f.transformer = testing::write_tensors((root / transformer_dir / "h3_demo.safetensors").string(),
                                         testing::h3_named_tensors(demo.transformer));
  testing::write_json((root / transformer_dir / "config.json").string(), testing::h3_config_json(demo.transformer.config));
  f.vae = testing::write_tensors((root / vae_dir / "h3_vae.safetensors").string(),
                                 testing::comfy_video_decoder_tensors(demo.video_vae));
  testing::write_json((root / vae_dir / "config.json").string(),
                      testing::video_vae_config_json(demo.video_vae.config, /*with_latents=*/false));
  f.audio_vae = testing::write_tensors((root / audio_dir / "h3_audio_vae.safetensors").string(),
                                       testing::comfy_audio_decoder_tensors(demo.audio_vae));
  testing::write_json((root / audio_dir / "config.json").string(),
                      testing::audio_vae_config_json(demo.audio_vae.config, /*with_latents=*/false));
  return f;
}

TEST(EngineComponents, DemoWithComfyVaeFilesEqualsTheBuiltInDemo) {
  testing::TempDir dir("components");
  const DemoFiles files = write_demo_parts(dir.path, "t", "video", "audio");
  const engine::GenerateRequest request = testing::short_demo_request(3);
  Expected<engine::RunResult> plain = run(engine::ModelSource{}, request);
  ASSERT_TRUE(plain.has_value()) << plain.status().to_string();
  engine::ModelSource source;
  source.vae = files.vae;
  source.audio_vae = files.audio_vae;
  Expected<engine::RunResult> with = run(source, request);
  ASSERT_TRUE(with.has_value()) << with.status().to_string();
  EXPECT_TRUE(same_bytes(plain->result.frames, with->result.frames));
  EXPECT_TRUE(same_bytes(plain->result.waveform, with->result.waveform));
  EXPECT_NE(with->report.model.find("with the video VAE " + files.vae), std::string::npos) << with->report.model;
}

// fl2va reads the keyframes' encoder from the given VAE file (the demo's would not pair with its
// decoder): a decode-only file is refused naming it.
TEST(EngineComponents, KeyframesAreEncodedByTheGivenVaeFile) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("components_fl2va");
  const DemoFiles files = write_demo_parts(dir.path, "t", "video", "audio");
  engine::ModelSource source;
  source.vae = files.vae;
  Expected<std::unique_ptr<engine::Engine>> e = engine::Engine::open(source, engine::EngineOptions{});
  ASSERT_TRUE(e.has_value()) << e.status().to_string();
  engine::GenerateRequest r;
  r.frames = 124;
  r.steps = 1;
  r.text_rows = 8;
  r.references = {{engine::ReferenceInput::Kind::kFirstFrame,
                   testing::test_data_dir() + "/reference_media/images/rgb_odd.png"}};
  Expected<engine::RunPlan> plan = (*e)->plan(r);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  const Status s = (*e)->run(*plan).status();
  EXPECT_TRUE(mentions(s, files.vae) && mentions(s, "holds no encoder.* / quant_conv.* weights")) << s.to_string();
}

TEST(EngineComponents, ComfyModelsTreeIsFoundByKeysAndGeneratesTheDemo) {
  testing::TempDir dir("comfy_tree");
  const fs::path models = dir.path / "models";
  const DemoFiles files = write_demo_parts(models, "diffusion_models/h3", "vae/h3_video", "vae/h3_audio");
  // Files the search must pass over: another model's VAE, a file that is not safetensors, a Qwen3
  // text model without a vision tower.
  testing::write_tensors((models / "vae" / "sdxl_vae.safetensors").string(),
                         {{"decoder.conv_in.weight", Tensor::zeros({4, 4, 3, 3}, DType::kF32)}});
  std::ofstream(models / "vae" / "broken.safetensors") << "not a safetensors file";
  fs::create_directories(models / "text_encoders");
  testing::write_tensors((models / "text_encoders" / "qwen3_4b.safetensors").string(),
                         {{"model.embed_tokens.weight", Tensor::zeros({8, 4}, DType::kF32)},
                          {"model.layers.0.self_attn.q_norm.weight", Tensor::zeros({2}, DType::kF32)}});

  engine::ModelSource source;
  source.comfy_models = models.string();
  Expected<engine::ModelComponents> parts = engine::resolve_components(source);
  ASSERT_TRUE(parts.has_value()) << parts.status().to_string();
  EXPECT_EQ(parts->transformer_file, files.transformer);
  EXPECT_EQ(parts->vae, files.vae);
  EXPECT_EQ(parts->audio_vae, files.audio_vae);
  EXPECT_FALSE(parts->text_encoder.has_value());
  ASSERT_FALSE(parts->notes.empty());
  EXPECT_NE(parts->notes.back().find("qwen3_4b.safetensors"), std::string::npos) << parts->notes.back();

  // A checkpoint needs conditioning: the same text features through the tree and the demo.
  const std::string features = dir.file("features.safetensors");
  ASSERT_TRUE(weights::write_safetensors(features, {{"prompt_embeds", normal_tensor({1, 8, 16}, 5, 1)}}).is_ok());
  engine::GenerateRequest request = testing::short_demo_request(4);
  request.text_features_file = features;
  Expected<engine::RunResult> plain = run(engine::ModelSource{}, request);
  ASSERT_TRUE(plain.has_value()) << plain.status().to_string();
  Expected<engine::RunResult> tree = run(source, request);
  ASSERT_TRUE(tree.has_value()) << tree.status().to_string();
  EXPECT_TRUE(same_bytes(plain->result.frames, tree->result.frames));
  EXPECT_TRUE(same_bytes(plain->result.waveform, tree->result.waveform));
  EXPECT_FALSE(tree->report.demo);

  // Without features or a prompt it is refused as any checkpoint; --prompt without a tokenizer
  // says ComfyUI keeps none.
  Status s = run(source, testing::short_demo_request()).status();
  EXPECT_TRUE(mentions(s, "needs conditioning")) << s.to_string();
  engine::GenerateRequest prompt = testing::short_demo_request();
  prompt.prompt = "a fox";
  s = engine::Engine::check_conditioning(source, prompt);
  EXPECT_TRUE(mentions(s, "ComfyUI keeps none")) << s.to_string();
}

TEST(EngineComponents, RefusesWhatTheTreeCannotTellApartOrLacks) {
  testing::TempDir dir("comfy_bad");
  const fs::path models = dir.path / "models";
  const DemoFiles files = write_demo_parts(models, "diffusion_models/a", "vae/v", "vae/a");
  fs::create_directories(models / "diffusion_models" / "b");
  fs::copy_file(files.transformer, models / "diffusion_models" / "b" / "h3_fp8.safetensors");
  engine::ModelSource source;
  source.comfy_models = models.string();
  Status s = engine::resolve_components(source).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_TRUE(mentions(s, "2 MiniMax-H3 transformer files") && mentions(s, "h3_fp8.safetensors") &&
              mentions(s, "--transformer FILE"))
      << s.to_string();
  // Naming one picks it.
  source.transformer_file = files.transformer;
  EXPECT_TRUE(engine::resolve_components(source).has_value());

  fs::remove(files.audio_vae);
  s = engine::resolve_components(source).status();
  EXPECT_EQ(s.code(), ErrorCode::kNotFound) << s.to_string();
  EXPECT_TRUE(mentions(s, "a MiniMax-H3 audio VAE (in vae/; --audio-vae FILE)") && mentions(s, "Searched:")) << s.to_string();

  engine::ModelSource both = source;
  both.dir = testing::test_data_dir() + "/h3_tiny";
  EXPECT_TRUE(mentions(engine::resolve_components(both).status(), "two model sources"));
  engine::ModelSource random;
  random.random_weights = true;
  random.vae = files.vae;
  EXPECT_FALSE(engine::Engine::open(random, engine::EngineOptions{}).has_value());
  engine::ModelSource nowhere;
  nowhere.comfy_models = dir.file("no_such_models");
  EXPECT_EQ(engine::resolve_components(nowhere).status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace orochi
