// Per-request LoRAs (Engine::use_loras, issue 24): one engine runs requests that name their LoRA
// sets. A set already merged is not merged again (the report says cached, merge time 0, and no
// weights are read); another strength or no LoRA reads the base weights again and merges anew, so the
// frames equal those of an engine opened with that set. On the demo model (one transformer, read
// again here) and on a tiny checkpoint folder (the partition read again by use_partition).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/engine.h"
#include "support/demo_request.h"
#include "support/paths.h"
#include "support/random.h"
#include "support/temp_dir.h"
#include "support/tiny_checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi::engine {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.shape() == b.shape() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0;
}

// A diffusers-format LoRA on block 0's q and block 1's FFN output of a model of `c`'s widths.
std::string write_lora(const testing::TempDir& dir, const std::string& name, const h3::H3Config& c, uint64_t seed) {
  const int64_t H = c.hidden_size, inner = c.inner_dim(), F = c.ffn_dim, r = 2;
  const std::string q = "transformer.transformer_blocks.0.attn.to_q.", f = "transformer.transformer_blocks.1.ff.net.2.";
  const std::string path = dir.file(name);
  EXPECT_TRUE(weights::write_safetensors(path, {{q + "lora_A.weight", testing::random_normal({r, H}, seed)},
                                                {q + "lora_B.weight", testing::random_normal({inner, r}, seed + 1)},
                                                {f + "lora_A.weight", testing::random_normal({r, F}, seed + 2, 0.3f)},
                                                {f + "lora_B.weight", testing::random_normal({H, r}, seed + 3, 0.3f)}})
                  .is_ok());
  return path;
}

struct Ran {
  Tensor frames;
  RunReport report;
};

Ran run(Engine& e, const GenerateRequest& request) {
  Expected<RunPlan> plan = e.plan(request);
  EXPECT_TRUE(plan.has_value()) << plan.status().to_string();
  if (!plan) return {};
  Expected<RunResult> r = e.run(*plan);
  EXPECT_TRUE(r.has_value()) << r.status().to_string();
  if (!r) return {};
  return {r->result.frames, r->report};
}

std::unique_ptr<Engine> open(ModelSource source) {
  Expected<std::unique_ptr<Engine>> e = Engine::open(source, EngineOptions{.device = "cpu"});
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  return e ? std::move(e).value() : nullptr;
}

GenerateRequest with_loras(GenerateRequest r, std::optional<std::vector<LoraSource>> loras) {
  r.loras = std::move(loras);
  return r;
}

// Requests A (x at 1), B (the same), C (x at 0.5), D (none) and E (no list: the opened set, none)
// on one engine of `source`, against engines opened with x at 1 and without LoRAs.
void check_request_sets(ModelSource source, const GenerateRequest& base, const std::string& x) {
  std::unique_ptr<Engine> plain_engine = open(source), engine = open(source);
  ModelSource with_x = source;
  with_x.loras = {{x, 1.0f}};
  std::unique_ptr<Engine> x_engine = open(with_x);
  ASSERT_TRUE(plain_engine && engine && x_engine);
  const Tensor plain = run(*plain_engine, base).frames, x_frames = run(*x_engine, base).frames;
  ASSERT_FALSE(same_bits(plain, x_frames));

  const Ran a = run(*engine, with_loras(base, std::vector<LoraSource>{{x, 1.0f}}));
  EXPECT_TRUE(same_bits(a.frames, x_frames));
  ASSERT_EQ(a.report.loras.size(), 1u);
  EXPECT_EQ(a.report.loras[0]["cached"], false);
  EXPECT_EQ(a.report.loras[0]["strength"], 1.0);
  EXPECT_EQ(a.report.loras[0]["content_fnv1a"].get<std::string>().size(), 16u);

  const Ran b = run(*engine, with_loras(base, std::vector<LoraSource>{{x, 1.0f}}));
  EXPECT_TRUE(same_bits(b.frames, x_frames));
  ASSERT_EQ(b.report.loras.size(), 1u);
  EXPECT_EQ(b.report.loras[0]["cached"], true);
  EXPECT_EQ(b.report.loras[0]["merge_s"], 0.0);
  EXPECT_EQ(b.report.load_s, 0.0);  // nothing read again

  const Ran c = run(*engine, with_loras(base, std::vector<LoraSource>{{x, 0.5f}}));
  ASSERT_EQ(c.report.loras.size(), 1u);
  EXPECT_EQ(c.report.loras[0]["cached"], false);
  EXPECT_EQ(c.report.loras[0]["strength"], 0.5);
  EXPECT_FALSE(same_bits(c.frames, x_frames));
  EXPECT_FALSE(same_bits(c.frames, plain));

  const Ran d = run(*engine, with_loras(base, std::vector<LoraSource>{}));
  EXPECT_TRUE(same_bits(d.frames, plain));
  EXPECT_TRUE(d.report.loras.empty());

  const Ran e = run(*engine, with_loras(base, std::nullopt));  // the opened set: none, merged already
  EXPECT_TRUE(same_bits(e.frames, plain));
  EXPECT_EQ(e.report.load_s, 0.0);

  // A missing file is refused naming it, and the engine still runs the next request.
  Expected<RunPlan> plan = engine->plan(with_loras(base, std::vector<LoraSource>{{x + ".missing", 1.0f}}));
  ASSERT_TRUE(plan.has_value());
  Expected<RunResult> missing = engine->run(*plan);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find(x + ".missing"), std::string::npos) << missing.status().message();
  EXPECT_TRUE(same_bits(run(*engine, with_loras(base, std::vector<LoraSource>{{x, 1.0f}})).frames, x_frames));
}

TEST(EngineRequestLoras, DemoModelMergesOnlyWhenTheSetChanges) {
  testing::TempDir dir("reqlora");
  check_request_sets(ModelSource{}, testing::short_demo_request(3),
                     write_lora(dir, "x.safetensors", h3::H3Config::tiny_demo(), 17));
}

TEST(EngineRequestLoras, CheckpointFolderReadsItsPartitionAgain) {
  testing::TempDir dir("reqlora");
  const std::filesystem::path root = dir.path / "model";
  testing::assemble_tiny_checkpoint(root);
  std::ifstream config(testing::test_data_dir() + "/h3_tiny/transformer/config.json");
  Expected<h3::H3Config> tiny = h3::H3Config::from_json(nlohmann::json::parse(config));
  ASSERT_TRUE(tiny.has_value()) << tiny.status().to_string();
  GenerateRequest r = testing::short_demo_request(4);
  r.prompt = "a red fox in the snow";
  r.text_layer = testing::kTinyTextLayer;
  r.text_rows = 0;
  check_request_sets(ModelSource{.dir = root.string()}, r, write_lora(dir, "x.safetensors", *tiny, 23));
}

}  // namespace
}  // namespace orochi::engine
