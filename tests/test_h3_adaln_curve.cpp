// The pruned curve-form AdaLN (models/h3/adaln_curve.h, MODELS_H3.md §7): a single-file transformer
// made here from the tiny H3 test model with original names, no time MLP, and `adaln_t_table` rows =
// SiLU(temb(t_g)) at G grid points (r = the tiny time-embed dim, the AdaLN projections as they are).
// At grid timesteps its forward equals the tiny model's; between them its tables are the hand lerp of
// the grid tables and differ from the model's. Bad tables and shapes are refused naming the key; a
// LoRA on the pruned [18H, r] AdaLN shapes merges, one of the full shapes is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>

#include "backends/cpu/ops.h"
#include "engine/engine.h"
#include "models/h3/adaln_curve.h"
#include "models/h3/checkpoint_layout.h"
#include "models/h3/lora.h"
#include "models/h3/transformer.h"
#include "models/h3/weights.h"
#include "support/compare.h"
#include "support/demo_request.h"
#include "support/h3_inputs.h"
#include "support/model_export.h"
#include "support/paths.h"
#include "support/random.h"
#include "support/temp_dir.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

using Tensors = std::vector<std::pair<std::string, Tensor>>;
using Named = std::map<std::string, Tensor>;

constexpr int64_t kGrid = 5;  // t_g = 0, 0.25, 0.5, 0.75, 1
const std::string kPrefix = "model.diffusion_model.";

std::string tiny_folder() { return testing::test_data_dir() + "/h3_tiny/transformer"; }

h3::H3Weights tiny_weights() {
  Expected<h3::H3Weights> w = h3::load_weights(tiny_folder());
  EXPECT_TRUE(w.has_value()) << w.status().to_string();
  return std::move(w).value();
}

Tensor grid_timesteps() {
  std::vector<float> t;
  for (int64_t g = 0; g < kGrid; ++g) t.push_back(static_cast<float>(g) / static_cast<float>(kGrid - 1));
  return Tensor::from_floats(t, {kGrid});
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

// `w` (diffusers names) under original names and kPrefix, q/k/v fused in contiguous thirds, fc1
// as [gate; value]; the time MLP replaced by `table`.
Tensors curve_file_tensors(const Named& w, const Tensor& table) {
  Tensors out;
  for (const auto& [name, t] : w) {
    if (name.starts_with("time_embedder.")) continue;
    if (const size_t at = name.find(".attn.to_q."); at != std::string::npos) {
      const std::string base = name.substr(0, at) + ".attn.";
      out.emplace_back(kPrefix + h3::original_key(name.substr(0, at)) + ".attn.qkv_proj.weight",
                       cat_rows({w.at(base + "to_q.weight"), w.at(base + "to_k.weight"), w.at(base + "to_v.weight")}));
      continue;
    }
    if (name.find(".attn.to_k.") != std::string::npos || name.find(".attn.to_v.") != std::string::npos) continue;
    const bool fc1 = name.find(".ff.net.0.proj.") != std::string::npos;
    out.emplace_back(kPrefix + h3::original_key(name), fc1 ? h3::swap_row_halves(t) : t);
  }
  out.emplace_back(kPrefix + "adaln_t_table", table);
  return out;
}

// The table sampled from the tiny model: rows SiLU(temb(t_g)), what its AdaLN projections read.
Tensor sampled_table(const h3::H3Weights& w) {
  return cpu::silu(h3::compute_modulation_tables(w, grid_timesteps()).temb);  // [G, T]
}

Expected<h3::TransformerFile> load(const std::string& path) {
  h3::TransformerFileOptions o;
  o.config_path = tiny_folder() + "/config.json";
  o.qkv_order = h3::QkvOrder::kThirds;
  return h3::load_transformer_file(path, o);
}

std::string write(const testing::TempDir& dir, const std::string& name, const Tensors& t) {
  const std::string path = dir.file(name);
  EXPECT_TRUE(weights::write_safetensors(path, t).is_ok());
  return path;
}

h3::H3Inputs inputs(const h3::H3Config& c, int64_t timesteps) {
  const int64_t nt = 3, na = 4, nv = 6, S = nt + na + nv;
  testing::PackedRows rows;
  for (int64_t s = 0; s < S; ++s) {
    (s < nt ? rows.text : s < nt + na ? rows.audio : rows.video).push_back(s);
    rows.timestep_index.push_back(s % timesteps);
  }
  for (int64_t i = 0; i < 3 * S; ++i) rows.positions.push_back(static_cast<float>((i * 5) % 7));
  return testing::h3_inputs(c, rows, 11);
}

h3::H3Outputs run(const h3::H3Weights& w, const std::vector<float>& t) {
  const Tensor ts = Tensor::from_floats(t, {static_cast<int64_t>(t.size())});
  Expected<h3::H3Outputs> out =
      h3::forward(w, inputs(w.config, ts.numel()), h3::compute_modulation_tables(w, ts));
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  return std::move(out).value();
}

class H3AdalnCurve : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tiny_weights();
    named_ = testing::h3_named_tensors(base_);
    table_ = sampled_table(base_);
    path_ = write(dir_, "pruned.safetensors", curve_file_tensors(named_, table_));
  }
  testing::TempDir dir_{"h3curve"};
  h3::H3Weights base_;
  Named named_;
  Tensor table_;
  std::string path_;
};

TEST_F(H3AdalnCurve, LoadsFromItsKeysWithGAndRFromTheTable) {
  Expected<h3::TransformerFile> f = load(path_);
  ASSERT_TRUE(f.has_value()) << f.status().to_string();
  EXPECT_EQ(f->weights.config.adaln_curve_points, kGrid);
  EXPECT_EQ(f->weights.config.time_embed_dim, base_.config.time_embed_dim);
  EXPECT_FALSE(f->weights.time_linear_1.weight.defined());
  EXPECT_TENSOR_CLOSE(f->weights.adaln_t_table, table_, 0.0);
  EXPECT_NE(f->layout.find("curve-form AdaLN"), std::string::npos) << f->layout;
  EXPECT_NE(f->layout.find("approximation"), std::string::npos) << f->layout;
  // The config the engine plans with (headers only) says the same.
  Expected<std::pair<h3::H3Config, std::string>> c = h3::transformer_file_config(path_, tiny_folder() + "/config.json");
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_EQ(c->first.adaln_curve_points, kGrid);
}

TEST_F(H3AdalnCurve, EqualsTheModelAtGridPointsAndTheLerpBetween) {
  Expected<h3::TransformerFile> f = load(path_);
  ASSERT_TRUE(f.has_value()) << f.status().to_string();
  const h3::H3Weights& curve = f->weights;
  // Grid timesteps (t = 1 is the last row through i0 = G - 2 with weight 1).
  const std::vector<float> on_grid = {0.25f, 0.75f, 1.0f};
  const h3::H3Outputs a = run(curve, on_grid), b = run(base_, on_grid);
  EXPECT_TENSOR_CLOSE(a.video, b.video, 1e-5);
  EXPECT_TENSOR_CLOSE(a.audio, b.audio, 1e-5);

  // Between grid points: t = 0.4 is 0.6 of the way from t_1 = 0.25 to t_2 = 0.5 (and t outside
  // [0, 1] clamps). The AdaLN is affine in its input, so every table is the lerp of the grid ones.
  const std::vector<float> between = {0.4f};
  const h3::ModulationTables m = h3::compute_modulation_tables(curve, Tensor::from_floats(between, {1}));
  const h3::ModulationTables g = h3::compute_modulation_tables(curve, grid_timesteps());
  auto lerp_rows = [](const Tensor& t, int64_t rows_per_t, int64_t i0, float f) {  // rows of t_i0 .. t_i0+1
    const int64_t w = t.dim(1);
    Tensor out = Tensor::empty({rows_per_t, w}, DType::kF32);
    for (int64_t r = 0; r < rows_per_t * w; ++r)
      out.data<float>()[r] = (1 - f) * t.data<float>()[i0 * rows_per_t * w + r] + f * t.data<float>()[(i0 + 1) * rows_per_t * w + r];
    return out;
  };
  const float frac = 0.4f * (kGrid - 1) - 1.0f;
  EXPECT_TENSOR_CLOSE(m.temb, lerp_rows(table_, 1, 1, frac), 1e-6);
  for (size_t i = 0; i < m.blocks.size(); ++i) {
    SCOPED_TRACE("block " + std::to_string(i));
    EXPECT_TENSOR_CLOSE(m.blocks[i], lerp_rows(g.blocks[i], h3::kModalities, 1, frac), 1e-5);
  }
  EXPECT_TENSOR_CLOSE(m.final, lerp_rows(g.final, 1, 1, frac), 1e-5);
  const h3::ModulationTables exact = h3::compute_modulation_tables(base_, Tensor::from_floats(between, {1}));
  EXPECT_GT(testing::compare(m.blocks[0], exact.blocks[0]).rel_l2, 1e-4);  // an approximation
  EXPECT_GT(testing::compare(run(curve, between).video, run(base_, between).video).rel_l2, 1e-5);
  const h3::ModulationTables clamped = h3::compute_modulation_tables(curve, Tensor::from_floats({-0.5f, 2.0f}, {2}));
  EXPECT_TENSOR_CLOSE(clamped.temb, cat_rows({lerp_rows(table_, 1, 0, 0), lerp_rows(table_, 1, kGrid - 2, 1)}), 0.0);
}

void expect_refused(const Expected<h3::TransformerFile>& f, const std::string& words) {
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.status().message().find(words), std::string::npos) << f.status().message();
}

TEST_F(H3AdalnCurve, RefusesBadTablesAndShapesNamingTheKey) {
  auto with = [&](const std::function<void(Tensors&)>& change) {
    Tensors t = curve_file_tensors(named_, table_);
    change(t);
    return load(write(dir_, "bad.safetensors", t));
  };
  auto set = [](Tensors& t, const std::string& key, Tensor value) {
    for (auto& [k, v] : t)
      if (k == key) v = value;
  };
  const std::string table_key = kPrefix + "adaln_t_table";
  expect_refused(with([&](Tensors& t) { set(t, table_key, Tensor::zeros({1, 16}, DType::kF32)); }), table_key);
  expect_refused(with([&](Tensors& t) { set(t, table_key, Tensor::zeros({80}, DType::kF32)); }), table_key);
  // r from the table (8) against AdaLN projections made for 16.
  expect_refused(with([&](Tensors& t) { set(t, table_key, Tensor::zeros({kGrid, 8}, DType::kF32)); }),
                 kPrefix + "blocks.0.adaln_proj.linear.weight");
  const std::string final_key = kPrefix + "final_layer.adaln_proj.linear.weight";
  expect_refused(with([&](Tensors& t) { set(t, final_key, Tensor::zeros({48, 8}, DType::kF32)); }), final_key);
  // A time MLP beside the table: two AdaLN inputs, refused as keys this form does not have.
  expect_refused(with([&](Tensors& t) {
                   t.emplace_back(kPrefix + "time_embedder.proj_in.weight", named_.at("time_embedder.linear_1.weight"));
                 }),
                 "time_embedder.proj_in.weight");
}

// A curve-form model with r = 4 (not the time-embed dim): a LoRA on its [18H, 4] AdaLN projections
// merges into those shapes; one made for the full [18H, 16] shapes is refused naming its key, as is a
// LoRA on the time MLP it does not have.
TEST_F(H3AdalnCurve, LorasOnThePrunedAdalnShapes) {
  constexpr int64_t r = 4, rank = 2;
  const int64_t H = base_.config.hidden_size;
  Named pruned = named_;
  uint64_t seed = 40;
  for (auto& [name, t] : pruned)
    if (name.find("adaln_proj.linear.weight") != std::string::npos || name == "norm_out.linear.weight")
      t = testing::random_normal({t.dim(0), r}, seed++);
  const std::string path = write(dir_, "pruned_r4.safetensors", curve_file_tensors(pruned, testing::random_normal({kGrid, r}, 7)));
  Expected<h3::TransformerFile> f = load(path);
  ASSERT_TRUE(f.has_value()) << f.status().to_string();
  EXPECT_EQ(f->weights.config.time_embed_dim, r);
  const std::string key = "transformer.transformer_blocks.1.adaln_proj.linear.";
  const Tensor down = testing::random_normal({rank, r}, 8), up = testing::random_normal({18 * H, rank}, 9);
  const std::string lora_path = write(dir_, "lora.safetensors", {{key + "lora_A.weight", down}, {key + "lora_B.weight", up}});
  Expected<h3::H3Lora> lora = h3::read_lora(lora_path, f->weights.config);
  ASSERT_TRUE(lora.has_value()) << lora.status().to_string();
  h3::H3Weights merged = f->weights;
  ASSERT_TRUE(h3::merge_lora(merged, *lora, 0.5f).is_ok());
  Tensor expected = f->weights.blocks[1].adaln.weight.clone();  // W + 0.5 · up·down
  for (int64_t o = 0; o < 18 * H; ++o)
    for (int64_t i = 0; i < r; ++i) {
      float s = 0;
      for (int64_t k = 0; k < rank; ++k) s += up.data<float>()[o * rank + k] * down.data<float>()[k * r + i];
      expected.data<float>()[o * r + i] += 0.5f * s;
    }
  EXPECT_TENSOR_CLOSE(merged.blocks[1].adaln.weight, expected, 1e-6);
  // The merged model's tables follow (block 1's changes, block 0's does not).
  const Tensor ts = Tensor::from_floats({0.3f}, {1});
  const h3::ModulationTables before = h3::compute_modulation_tables(f->weights, ts);
  const h3::ModulationTables after = h3::compute_modulation_tables(merged, ts);
  EXPECT_TENSOR_CLOSE(after.blocks[0], before.blocks[0], 0.0);
  EXPECT_GT(testing::compare(after.blocks[1], before.blocks[1]).rel_l2, 1e-3);

  const Tensor full_down = testing::random_normal({rank, base_.config.time_embed_dim}, 10);
  Expected<h3::H3Lora> full = h3::read_lora(
      write(dir_, "full.safetensors", {{key + "lora_A.weight", full_down}, {key + "lora_B.weight", up}}), f->weights.config);
  ASSERT_FALSE(full.has_value());
  EXPECT_NE(full.status().message().find(key + "lora"), std::string::npos) << full.status().message();
  const std::string mlp = "transformer.time_embedder.linear_2.";
  Expected<h3::H3Lora> time_mlp = h3::read_lora(
      write(dir_, "mlp.safetensors", {{mlp + "lora_A.weight", testing::random_normal({rank, 24}, 11)},
                                      {mlp + "lora_B.weight", testing::random_normal({r, rank}, 12)}}),
      f->weights.config);
  ASSERT_FALSE(time_mlp.has_value());
  EXPECT_NE(time_mlp.status().message().find(mlp), std::string::npos) << time_mlp.status().message();
}

// The demo model's curve form as a --transformer file through the engine: the report's plan notes
// say it is an approximation, and per-request LoRAs on its pruned AdaLN read the file again and merge
// (a request without them runs as the file alone).
TEST(H3AdalnCurveEngine, DemoRunsTheFileNotesTheApproximationAndTakesRequestLoras) {
  const h3::H3Config c = h3::H3Config::tiny_demo();
  const h3::H3Weights demo = h3::random_weights(c, engine::kDemoWeightSeed);
  Named named = testing::h3_named_tensors(demo);
  named.erase("time_embedder.linear_1.weight");
  named.erase("time_embedder.linear_1.bias");
  named.erase("time_embedder.linear_2.weight");
  named.erase("time_embedder.linear_2.bias");
  named["adaln_t_table"] = sampled_table(demo);
  testing::TempDir dir("h3curve_engine");
  const std::string file = testing::write_tensors(dir.file("pruned.safetensors"), named);
  engine::ModelSource source;
  source.transformer_file = file;
  source.transformer_config = testing::write_json(dir.file("config.json"), testing::h3_config_json(c));
  Expected<std::unique_ptr<engine::Engine>> e = engine::Engine::open(source, engine::EngineOptions{});
  ASSERT_TRUE(e.has_value()) << e.status().to_string();
  auto run_request = [&](std::optional<std::vector<engine::LoraSource>> loras) -> engine::RunResult {
    engine::GenerateRequest r = testing::short_demo_request(2);
    r.loras = std::move(loras);
    Expected<engine::RunPlan> plan = (*e)->plan(r);
    EXPECT_TRUE(plan.has_value()) << plan.status().to_string();
    Expected<engine::RunResult> ran = (*e)->run(*plan);
    EXPECT_TRUE(ran.has_value()) << ran.status().to_string();
    return ran ? std::move(ran).value() : engine::RunResult{};
  };
  const engine::RunResult plain = run_request(std::nullopt);
  EXPECT_NE(plain.report.plan["notes"].dump().find("curve-form AdaLN"), std::string::npos) << plain.report.plan.dump();
  EXPECT_NE(plain.report.plan["notes"].dump().find("approximation"), std::string::npos);

  const std::string key = "transformer.transformer_blocks.0.adaln_proj.linear.";
  const std::string lora = dir.file("adaln_lora.safetensors");
  ASSERT_TRUE(weights::write_safetensors(lora, {{key + "lora_A.weight", testing::random_normal({2, c.time_embed_dim}, 5)},
                                                {key + "lora_B.weight", testing::random_normal({18 * c.hidden_size, 2}, 6)}})
                  .is_ok());
  const engine::RunResult with = run_request(std::vector<engine::LoraSource>{{lora, 1.0f}});
  ASSERT_EQ(with.report.loras.size(), 1u);
  EXPECT_EQ(with.report.loras[0]["cached"], false);
  const auto frames_equal = [](const Tensor& a, const Tensor& b) {
    return a.defined() && b.defined() && a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
  };
  EXPECT_FALSE(frames_equal(with.result.frames, plain.result.frames));
  const engine::RunResult again = run_request(std::nullopt);  // the opened set: none, the file read again
  EXPECT_TRUE(frames_equal(again.result.frames, plain.result.frames));
}

}  // namespace
}  // namespace orochi
