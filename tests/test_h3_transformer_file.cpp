// Single-file (ComfyUI-style) H3 transformers: files written here from the tiny H3 test model with
// original names under both prefixes and in both fused-qkv orders load to weights byte-identical to
// the diffusers folder; the order is detected when q/k/v differ in scale and refused as ambiguous on
// random weights; FP8 weights dequantize with scale_weight; bad files are refused naming the key; a
// demo generate with the demo's transformer as a file equals the built-in demo.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>

#include "support/demo_request.h"
#include "engine/engine.h"
#include "models/h3/checkpoint_layout.h"
#include "models/h3/summary.h"
#include "models/h3/weights.h"
#include "support/model_export.h"
#include "support/paths.h"
#include "support/planner_inputs.h"
#include "planner/plan_report.h"
#include "support/temp_dir.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

using Tensors = std::vector<std::pair<std::string, Tensor>>;
using Named = std::map<std::string, Tensor>;

std::string tiny_folder() { return testing::test_data_dir() + "/h3_tiny/transformer"; }

// Every tensor of `w` by its diffusers name (support/model_export.h).
Named flatten(const h3::H3Weights& w) { return testing::h3_named_tensors(w); }

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0;
}

void expect_same(const Named& a, const Named& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    ASSERT_NE(it, b.end()) << name;
    EXPECT_TRUE(same_bytes(t, it->second)) << name;
  }
}

Tensor cat_rows(const std::vector<Tensor>& parts) {
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.dim(0);
  Tensor out = Tensor::empty({rows, parts[0].dim(1)}, DType::kF32);
  size_t at = 0;
  for (const Tensor& p : parts) {
    std::memcpy(reinterpret_cast<char*>(out.data<float>()) + at, p.contiguous().raw_data(), p.nbytes());
    at += p.nbytes();
  }
  return out;
}

// The original-named file of `w` (diffusers names -> f32 tensors): fused qkv in `order`, fc1 as
// [gate; value], keys under `prefix`.
Tensors original_file(const Named& w, const h3::H3Config& c, const std::string& prefix, h3::QkvOrder order) {
  Tensors out;
  const int64_t heads = c.num_attention_heads, hd = c.attention_head_dim;
  for (const auto& [name, t] : w) {
    const size_t at = name.find(".attn.to_q.");
    if (at != std::string::npos) {
      const std::string base = name.substr(0, at) + ".attn.";
      const Tensor& q = w.at(base + "to_q.weight");
      const Tensor& k = w.at(base + "to_k.weight");
      const Tensor& v = w.at(base + "to_v.weight");
      Tensor fused;
      if (order == h3::QkvOrder::kThirds) {
        fused = cat_rows({q, k, v});
      } else {
        std::vector<Tensor> parts;
        for (int64_t h = 0; h < heads; ++h)
          for (const Tensor* p : {&q, &k, &v}) parts.push_back(p->slice(0, h * hd, (h + 1) * hd));
        fused = cat_rows(parts);
      }
      out.emplace_back(prefix + h3::original_key(name.substr(0, at)) + ".attn.qkv_proj.weight", fused);
      continue;
    }
    if (name.find(".attn.to_k.") != std::string::npos || name.find(".attn.to_v.") != std::string::npos) continue;
    const bool fc1 = name.find(".ff.net.0.proj.") != std::string::npos;
    out.emplace_back(prefix + h3::original_key(name), fc1 ? h3::swap_row_halves(t) : t);
  }
  return out;
}

std::string write(const testing::TempDir& dir, const std::string& name, const Tensors& t) {
  const std::string path = dir.file(name);
  EXPECT_TRUE(weights::write_safetensors(path, t).is_ok());
  return path;
}

Named tiny_reference() {
  Expected<h3::H3Weights> w = h3::load_weights(tiny_folder());
  EXPECT_TRUE(w.has_value()) << w.status().to_string();
  return flatten(*w);
}

h3::H3Config tiny_config() {
  std::ifstream in(tiny_folder() + "/config.json");
  return *h3::H3Config::from_json(nlohmann::json::parse(in));
}

Expected<h3::TransformerFile> load(const std::string& path, std::optional<h3::QkvOrder> order,
                                   std::optional<std::string> config = tiny_folder() + "/config.json") {
  h3::TransformerFileOptions o;
  o.config_path = config;
  o.qkv_order = order;
  return h3::load_transformer_file(path, o);
}

TEST(H3TransformerFile, BothPrefixesAndQkvOrdersLoadByteIdenticalToTheFolder) {
  const Named ref = tiny_reference();
  const h3::H3Config c = tiny_config();
  testing::TempDir dir("h3file");
  for (const char* prefix : {"model.diffusion_model.", "diffusion_model."})
    for (h3::QkvOrder order : {h3::QkvOrder::kInterleaved, h3::QkvOrder::kThirds}) {
      SCOPED_TRACE(std::string(prefix) + h3::qkv_order_name(order));
      const std::string path = write(dir, "m.safetensors", original_file(ref, c, prefix, order));
      Expected<h3::TransformerFile> f = load(path, order);
      ASSERT_TRUE(f.has_value()) << f.status().to_string();
      expect_same(flatten(f->weights), ref);
      // Random weights: q, k and v blocks look alike, so the order is refused as ambiguous, naming
      // the file and what was checked.
      Expected<h3::TransformerFile> guessed = load(path, std::nullopt);
      ASSERT_FALSE(guessed.has_value());
      EXPECT_NE(guessed.status().message().find(path), std::string::npos);
      EXPECT_NE(guessed.status().message().find("ambiguous"), std::string::npos) << guessed.status().message();
      EXPECT_NE(guessed.status().message().find("--qkv-order"), std::string::npos);
    }
  // Diffusers names in one file load too (no qkv order to find).
  Tensors diffusers(ref.begin(), ref.end());
  Expected<h3::TransformerFile> d = load(write(dir, "d.safetensors", diffusers), std::nullopt);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  expect_same(flatten(d->weights), ref);
}

TEST(H3TransformerFile, DetectsTheQkvOrderWhenQKVDifferInScale) {
  // As in trained models, the three projections' scales differ (exact powers of two here).
  Named ref = tiny_reference();
  for (auto& [name, t] : ref) {
    const float s = name.find(".attn.to_k.") != std::string::npos   ? 0.25f
                    : name.find(".attn.to_v.") != std::string::npos ? 4.0f
                                                                     : 1.0f;
    if (s == 1.0f) continue;
    Tensor scaled = t.clone();
    for (int64_t i = 0; i < scaled.numel(); ++i) scaled.data<float>()[i] *= s;
    t = scaled;
  }
  const h3::H3Config c = tiny_config();
  testing::TempDir dir("h3file");
  for (h3::QkvOrder order : {h3::QkvOrder::kInterleaved, h3::QkvOrder::kThirds}) {
    const std::string path = write(dir, "m.safetensors", original_file(ref, c, "model.diffusion_model.", order));
    Expected<h3::TransformerFile> f = load(path, std::nullopt);
    ASSERT_TRUE(f.has_value()) << f.status().to_string();
    EXPECT_NE(f->layout.find(std::string("fused qkv ") + h3::qkv_order_name(order)), std::string::npos) << f->layout;
    expect_same(flatten(f->weights), ref);
  }
}

TEST(H3TransformerFile, Fp8ScaledWeightsDequantize) {
  const Named ref = tiny_reference();
  const h3::H3Config c = tiny_config();
  Tensors file = original_file(ref, c, "diffusion_model.", h3::QkvOrder::kThirds);
  Named expected = ref;
  // Block 0's fc2 as F8_E4M3 with a per-tensor scale, block 1's with per-row scales.
  for (auto& [key, t] : file)
    if (key == "diffusion_model.blocks.0.mlp.fc2.weight") {
      const Tensor f8 = t.to(DType::kF8E4M3);
      Tensor deq = f8.to(DType::kF32);
      for (int64_t i = 0; i < deq.numel(); ++i) deq.data<float>()[i] *= 0.5f;
      expected["transformer_blocks.0.ff.net.2.weight"] = deq;
      t = f8;
      file.emplace_back("diffusion_model.blocks.0.mlp.fc2.scale_weight", Tensor::from_floats({0.5f}, {}));
      break;
    }
  for (auto& [key, t] : file)
    if (key == "diffusion_model.blocks.1.mlp.fc2.weight") {
      const int64_t rows = t.dim(0), cols = t.dim(1);
      Tensor scale = Tensor::empty({rows}, DType::kF32);
      for (int64_t r = 0; r < rows; ++r) scale.data<float>()[r] = 0.125f * static_cast<float>(r + 1);
      const Tensor f8 = t.to(DType::kF8E4M3);
      Tensor deq = f8.to(DType::kF32);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k) deq.data<float>()[r * cols + k] *= scale.data<float>()[r];
      expected["transformer_blocks.1.ff.net.2.weight"] = deq;
      t = f8;
      file.emplace_back("diffusion_model.blocks.1.mlp.fc2.scale_weight", scale);
      break;
    }
  file.emplace_back("diffusion_model.scaled_fp8", Tensor::empty({2}, DType::kF8E4M3));
  testing::TempDir dir("h3file");
  Expected<h3::TransformerFile> f = load(write(dir, "fp8.safetensors", file), h3::QkvOrder::kThirds);
  ASSERT_TRUE(f.has_value()) << f.status().to_string();
  expect_same(flatten(f->weights), expected);
}

void expect_refused(const Tensors& file, const std::string& needle, std::optional<std::string> config = tiny_folder() + "/config.json") {
  testing::TempDir dir("h3file");
  Expected<h3::TransformerFile> f = load(write(dir, "bad.safetensors", file), h3::QkvOrder::kThirds, config);
  ASSERT_FALSE(f.has_value()) << needle;
  EXPECT_NE(f.status().message().find(needle), std::string::npos) << f.status().message();
}

// tests/data/h3_fp8 (scripts/golden/make_h3_fp8_files.py): torch's float8 codes of the tiny model's
// block weights in both ComfyUI conventions, and the bf16 weights ComfyUI dequantizes them to.
TEST(H3TransformerFile, ComfyUIsFp8FilesDequantizeToComfyUIsBf16Weights) {
  const Named ref = tiny_reference();
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(testing::test_data_dir() + "/h3_fp8/golden.safetensors");
  ASSERT_TRUE(golden.has_value()) << golden.status().to_string();
  for (const char* name : {"e4m3_tensor", "e5m2_rows"}) {
    testing::TempDir dir("h3fp8");
    const std::string file = dir.file(std::string(name) + ".safetensors");
    std::filesystem::copy_file(testing::test_data_dir() + "/h3_fp8/" + name + ".safetensors", file);
    std::filesystem::copy_file(tiny_folder() + "/config.json", dir.file("config.json"));
    for (bool as_stored : {false, true}) {
      h3::TransformerFileOptions o;
      o.as_stored = as_stored;
      Expected<h3::TransformerFile> f = h3::load_transformer_file(file, o);
      ASSERT_TRUE(f.has_value()) << name << ": " << f.status().to_string();
      int64_t quantized = 0;
      for (const auto& [key, t] : flatten(f->weights)) {
        const std::string g = std::string(name) + "/" + key;
        if (golden->contains(g)) {
          ++quantized;
          EXPECT_EQ(t.dtype(), as_stored ? DType::kBF16 : DType::kF32) << g;  // half the host memory for the GPU
          EXPECT_TRUE(same_bytes(t.to(DType::kBF16), *golden->get(g))) << g;
        } else {
          EXPECT_TRUE(same_bytes(t.to(DType::kF32), ref.at(key).to(DType::kF32))) << key;
        }
      }
      EXPECT_EQ(quantized, 21) << name;  // 3 blocks x 7 linears
    }
    // The host memory a GPU run takes for it: the stored tensors, the FP8 weights as bf16 copies.
    Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(file);
    const h3::HostBytes bytes = h3::host_bytes_as_loaded(*ckpt);
    uint64_t fp8_elements = 0;
    for (const std::string& key : ckpt->names())
      if (ckpt->info(key)->dtype == DType::kF8E4M3 || ckpt->info(key)->dtype == DType::kF8E5M2)
        fp8_elements += static_cast<uint64_t>(shape_numel(ckpt->info(key)->shape));
    EXPECT_GT(fp8_elements, 0u);
    EXPECT_EQ(bytes.copies, 2 * fp8_elements);
    EXPECT_EQ(bytes.mapped + fp8_elements, ckpt->total_bytes());
  }
}

// The plan shows the transformer's host bytes as loaded when the engine or --model knows them.
TEST(H3TransformerFile, ThePlanShowsTheTransformersHostBytes) {
  planner::PlanInput in = testing::h3_plan_input(139);
  const std::string without = planner::plan_text(testing::plan_or_fail(in));
  EXPECT_EQ(without.find("as loaded"), std::string::npos) << without;
  in.models.transformer_host_bytes = 36 * planner::kGiB;
  const planner::MemoryPlan plan = testing::plan_or_fail(in);
  EXPECT_NE(planner::plan_text(plan).find("the transformer's weights take 36.00 GiB as loaded"), std::string::npos);
  EXPECT_EQ(planner::plan_json(plan)["host_transformer_bytes"], 36 * planner::kGiB);
}

TEST(H3TransformerFile, RefusesFp8ItCannotRead) {
  const std::string base = testing::test_data_dir() + "/h3_fp8/e5m2_rows.safetensors";
  Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(base);
  ASSERT_TRUE(ckpt.has_value());
  const std::string module = "transformer_blocks.0.ff.net.2";
  auto edited = [&](const std::function<void(Named&)>& edit) {
    Named t;
    for (const std::string& key : ckpt->names()) t[key] = *ckpt->get(key);
    edit(t);
    return Tensors(t.begin(), t.end());
  };
  auto blob = [](const std::string& json) {
    Tensor b = Tensor::empty({static_cast<int64_t>(json.size())}, DType::kU8);
    std::memcpy(b.raw_data(), json.data(), json.size());
    return b;
  };
  expect_refused(edited([&](Named& t) { t[module + ".comfy_quant"] = blob("{\"format\": \"nvfp4\"}"); }),
                 "quantized as nvfp4, which Orochi does not read");
  expect_refused(edited([&](Named& t) { t[module + ".comfy_quant"] = blob("{\"format\": \"float8_e4m3fn\"}"); }),
                 "says float8_e4m3fn but " + module + ".weight is stored as f8e5m2");
  expect_refused(edited([&](Named& t) { t[module + ".scale_weight"] = Tensor::from_floats({1.0f}, {1}); }),
                 "two scale conventions on one weight");
  expect_refused(edited([&](Named& t) { t[module + ".weight_scale"] = Tensor::from_floats({1.0f, 2.0f}, {2}); }),
                 "expected one scale ([] or [1]) or one per row");
}

TEST(H3TransformerFile, RefusesMissingKeysWrongShapesAndOtherFiles) {
  const Named ref = tiny_reference();
  const h3::H3Config c = tiny_config();
  const Tensors good = original_file(ref, c, "model.diffusion_model.", h3::QkvOrder::kThirds);

  Tensors missing;
  for (const auto& [k, t] : good)
    if (k != "model.diffusion_model.blocks.1.mlp.fc2.weight") missing.emplace_back(k, t);
  expect_refused(missing, "model.diffusion_model.blocks.1.mlp.fc2.weight");

  Tensors wrong = good;
  for (auto& [k, t] : wrong)
    if (k == "model.diffusion_model.final_layer.video_out.weight") t = Tensor::empty({3, 5}, DType::kF32);
  expect_refused(wrong, "model.diffusion_model.final_layer.video_out.weight");

  Tensors extra = good;
  extra.emplace_back("model.diffusion_model.blocks.9.mlp.fc2.weight", Tensor::empty({2, 2}, DType::kF32));
  expect_refused(extra, "blocks.9.mlp.fc2.weight");

  expect_refused({{"vae.encoder.weight", Tensor::empty({2, 2}, DType::kF32)}}, "not a MiniMax-H3 transformer");
  // No config given or beside the file: the released config, whose shapes this file does not have.
  expect_refused(good, "checked against the released MiniMax-H3 config", std::nullopt);

  h3::TransformerFileOptions o;
  EXPECT_EQ(h3::load_transformer_file("/nonexistent/h3.safetensors", o).status().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(h3::parse_qkv_order("rows").has_value());
}


Expected<Tensor> demo_frames(const engine::ModelSource& source) {
  OROCHI_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> e, engine::Engine::open(source, engine::EngineOptions{}));
  OROCHI_ASSIGN_OR_RETURN(engine::RunPlan plan, e->plan(testing::short_demo_request()));
  OROCHI_ASSIGN_OR_RETURN(engine::RunResult run, e->run(plan));
  return run.result.frames;
}

TEST(H3TransformerFile, DemoGenerateWithTheFileEqualsTheBuiltInDemo) {
  const h3::H3Config c = h3::H3Config::tiny_demo();
  const Named demo = flatten(h3::random_weights(c, engine::kDemoWeightSeed));
  testing::TempDir dir("h3file");
  const std::string path = write(dir, "demo.safetensors", original_file(demo, c, "model.diffusion_model.", h3::QkvOrder::kThirds));
  const std::string config = dir.file("demo_config.json");
  {
    std::ofstream out(config);
    out << nlohmann::json{{"num_attention_heads", c.num_attention_heads}, {"attention_head_dim", c.attention_head_dim},
                          {"hidden_size", c.hidden_size}, {"num_layers", c.num_layers},
                          {"num_refiner_layers", c.num_refiner_layers}, {"ffn_dim", c.ffn_dim},
                          {"in_channels", c.in_channels}, {"audio_in_channels", c.audio_in_channels},
                          {"text_dim", c.text_dim}, {"freq_dim", c.freq_dim},
                          {"time_embed_hidden_dim", c.time_embed_hidden_dim}, {"time_embed_dim", c.time_embed_dim},
                          {"rope_freq_dim", c.rope_freq_dim}}
                           .dump();
  }
  Expected<Tensor> plain = demo_frames(engine::ModelSource{});
  ASSERT_TRUE(plain.has_value()) << plain.status().to_string();
  engine::ModelSource source;
  source.transformer_file = path;
  source.transformer_config = config;
  source.qkv_order = "thirds";
  Expected<Tensor> with = demo_frames(source);
  ASSERT_TRUE(with.has_value()) << with.status().to_string();
  EXPECT_TRUE(same_bytes(*plain, *with));

  // Ambiguous order on random weights, the tiny test model's channels (not the demo VAEs'), a bad
  // --qkv-order, and --qkv-order without a file are refused.
  source.qkv_order = "auto";
  EXPECT_FALSE(engine::Engine::open(source, engine::EngineOptions{}).has_value());
  source.qkv_order = "rows";
  EXPECT_FALSE(engine::Engine::open(source, engine::EngineOptions{}).has_value());
  engine::ModelSource tiny;
  tiny.transformer_file = write(dir, "tiny.safetensors", original_file(tiny_reference(), tiny_config(), "", h3::QkvOrder::kThirds));
  tiny.transformer_config = tiny_folder() + "/config.json";
  tiny.qkv_order = "thirds";
  Expected<std::unique_ptr<engine::Engine>> e = engine::Engine::open(tiny, engine::EngineOptions{});
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("demo model's VAEs"), std::string::npos) << e.status().message();
  engine::ModelSource no_file;
  no_file.qkv_order = "thirds";
  EXPECT_FALSE(engine::Engine::open(no_file, engine::EngineOptions{}).has_value());
}

}  // namespace
}  // namespace orochi
