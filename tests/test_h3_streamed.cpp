// The H3 forward with streamed transformer blocks against h3::forward on a small random model:
// every block streamed through 1, 2 or 3 staging slots, a mix of resident and streamed blocks,
// the mix the planner picks under a VRAM cap, slow copies; two consecutive steps (passes) with
// different inputs, outputs and every intermediate bit-identical. Plus packing, and the refusals.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "models/h3/streamed_forward.h"
#include "planner/tier_placement.h"
#include "support/h3_inputs.h"
#include "support/random.h"

namespace orochi {
namespace {

h3::H3Config small_config() {
  h3::H3Config c = h3::H3Config::tiny_demo();
  c.num_attention_heads = 4;
  c.hidden_size = 24;
  c.num_layers = 5;
  c.num_refiner_layers = 1;
  c.ffn_dim = 40;
  c.audio_in_channels = 6;
  c.text_dim = 8;
  c.freq_dim = 8;
  c.time_embed_hidden_dim = 24;
  c.time_embed_dim = 16;
  return c;
}

// Packed rows [text | audio | video] with per-row timesteps from two tabled values.
h3::H3Inputs small_inputs(const h3::H3Config& c, uint64_t seed) {
  const int64_t nt = 4, na = 5, nv = 12, S = nt + na + nv;
  testing::PackedRows rows;
  for (int64_t s = 0; s < S; ++s) {
    (s < nt ? rows.text : s < nt + na ? rows.audio : rows.video).push_back(s);
    rows.timestep_index.push_back(static_cast<int64_t>((s * 7 + seed) % 2));
  }
  for (int64_t i = 0; i < 3 * S; ++i) rows.positions.push_back(static_cast<float>((i * 5 + seed) % 7));
  return testing::h3_inputs(c, rows, seed);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0;
}

using Intermediates = std::map<std::string, Tensor>;

class H3Streamed : public ::testing::Test {
 protected:
  static constexpr int kSteps = 2;

  void SetUp() override {
    ASSERT_TRUE(config_.validate().is_ok());
    full_ = h3::random_weights(config_, 9);
    tables_ = h3::compute_modulation_tables(full_, Tensor::from_floats({0.3f, 0.8f}, {2}));
    for (int step = 0; step < kSteps; ++step) {
      inputs_.push_back(small_inputs(config_, 10 * step + 1));
      Intermediates seen;
      Expected<h3::H3Outputs> out = h3::forward(full_, inputs_[step], tables_, record(seen));
      ASSERT_TRUE(out.has_value()) << out.status().to_string();
      reference_.push_back(std::move(seen));
    }
  }

  static h3::H3Observer record(Intermediates& into) {
    return [&into](const std::string& name, const Tensor& t) { into[name] = t.clone(); };
  }

  // Runs kSteps streamed steps and expects every intermediate bit-identical to h3::forward's.
  // Returns the streamer's statistics.
  weights::StreamStats expect_identical(const std::vector<bool>& streamed, int slots, weights::HostCopyOptions options = {}) {
    SCOPED_TRACE(std::to_string(slots) + " slots");
    h3::H3Weights parts = full_;  // shares the tensors; create() moves the blocks out of `parts` only
    Expected<std::unique_ptr<h3::StreamedBlocks>> blocks = h3::StreamedBlocks::create(parts, streamed, slots, options);
    EXPECT_TRUE(blocks.has_value()) << blocks.status().to_string();
    if (!blocks) return {};
    for (int step = 0; step < kSteps; ++step) {
      Intermediates seen;
      Expected<h3::H3Outputs> out =
          h3::forward_streamed(parts, **blocks, inputs_[step], tables_, step + 1 < kSteps, record(seen));
      EXPECT_TRUE(out.has_value()) << out.status().to_string();
      if (!out) return {};
      EXPECT_EQ(seen.size(), reference_[step].size());
      for (const auto& [name, want] : reference_[step])
        EXPECT_TRUE(seen.count(name) && same_bytes(seen[name], want)) << "step " << step << ": " << name << " differs";
      EXPECT_TRUE(same_bytes(out->video, reference_[step].at("out.video")));
      EXPECT_TRUE(same_bytes(out->audio, reference_[step].at("out.audio")));
    }
    // The AdaLN projections stayed behind: the tables still come from `parts`.
    const h3::ModulationTables again = h3::compute_modulation_tables(parts, tables_.timesteps);
    for (size_t i = 0; i < tables_.blocks.size(); ++i) EXPECT_TRUE(same_bytes(again.blocks[i], tables_.blocks[i]));
    EXPECT_TRUE((*blocks)->finish().is_ok());
    return (*blocks)->stats();
  }

  h3::H3Config config_ = small_config();
  h3::H3Weights full_;
  h3::ModulationTables tables_;
  std::vector<h3::H3Inputs> inputs_;
  std::vector<Intermediates> reference_;
};

TEST_F(H3Streamed, EveryBlockStreamedMatchesTheResidentForward) {
  for (int slots : {1, 2, 3}) {
    const weights::StreamStats stats = expect_identical(std::vector<bool>(5, true), slots);
    ASSERT_EQ(stats.passes.size(), 2u);
    EXPECT_EQ(stats.passes[0].copies, 5);  // 5 blocks > slots: every step copies each block
    EXPECT_EQ(stats.passes[1].copies, 5);
    EXPECT_EQ(stats.max_in_flight, slots);
  }
}

TEST_F(H3Streamed, MixedResidentAndStreamedBlocksMatch) {
  const std::vector<bool> mixed = {false, true, true, false, true};
  expect_identical(mixed, 2);
  // Two slots for two streamed blocks: copied in the first step only.
  const weights::StreamStats kept = expect_identical({true, false, false, true, false}, 2);
  EXPECT_EQ(kept.passes[0].copies, 2);
  EXPECT_EQ(kept.passes[1].copies, 0);
  // Nothing streamed: the streamed forward is the resident one.
  EXPECT_EQ(expect_identical(std::vector<bool>(5, false), 1).copies(), 0);
}

TEST_F(H3Streamed, ThePlannersTiersDecideWhatStreams) {
  h3::H3Weights probe = full_;
  const uint64_t block_bytes = h3::packed_block_layout(probe.blocks[0]).bytes;
  std::vector<planner::WeightGroup> groups = {{"embedders", 5000, false}};
  for (int i = 0; i < config_.num_layers; ++i) groups.push_back({"block " + std::to_string(i), block_bytes});
  planner::PlacementInput cap;
  cap.policy.staging_slots = 2;
  cap.cap = 5000 + 4 * block_bytes;  // 2 slots + 2 resident blocks
  const planner::Placement placed = planner::place_weights(groups, cap);
  std::vector<bool> streamed;
  for (const planner::WeightGroup& g : placed.groups)
    if (g.name.rfind("block ", 0) == 0) streamed.push_back(g.tier == planner::Tier::kHost);
  ASSERT_EQ(streamed, (std::vector<bool>{false, false, true, true, true}));
  const weights::StreamStats stats = expect_identical(streamed, cap.policy.staging_slots);
  EXPECT_EQ(stats.bytes(), 2 * 3 * block_bytes);
}

TEST_F(H3Streamed, SlowCopiesAreWaitedFor) {
  weights::HostCopyOptions slow;
  slow.before_copy = [](int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    return Status::ok();
  };
  const weights::StreamStats stats = expect_identical(std::vector<bool>(5, true), 2, slow);
  EXPECT_GT(stats.wait_seconds, 0.0);
}

TEST_F(H3Streamed, PackedBlocksKeepExactBytesAndBiases) {
  h3::BlockWeights b = full_.blocks[2];
  b.attn.to_out.bias = testing::random_normal({config_.hidden_size}, 77);
  const h3::PackedBlockLayout layout = h3::packed_block_layout(b);
  EXPECT_EQ(layout.entries.size(), 11u);  // 4 norms, 6 weights, one bias; no AdaLN
  for (const auto& e : layout.entries) EXPECT_EQ(e.offset % 64, 0u) << e.name;
  Expected<std::vector<std::byte>> packed = h3::pack_block(b, layout);
  ASSERT_TRUE(packed.has_value()) << packed.status().to_string();
  auto buffer = Buffer::allocate(packed->size());
  std::memcpy(buffer->data(), packed->data(), packed->size());
  const h3::BlockWeights v = h3::view_packed_block(buffer, layout);
  EXPECT_TRUE(same_bytes(v.attn.to_out.bias, b.attn.to_out.bias));
  EXPECT_TRUE(same_bytes(v.ff_in.weight, b.ff_in.weight));
  EXPECT_TRUE(same_bytes(v.attn.norm_k, b.attn.norm_k));
  EXPECT_FALSE(v.attn.to_q.bias.defined());
  EXPECT_FALSE(v.adaln.weight.defined());
  for (const auto& e : layout.entries) {  // views, not copies
    if (e.name == "ff.net.0.proj.weight") {
      EXPECT_EQ(v.ff_in.weight.raw_data(), static_cast<std::byte*>(buffer->data()) + e.offset);
    }
  }

  // A block without that bias does not fit the layout.
  const Status missing = h3::pack_block(full_.blocks[2], layout).status();
  EXPECT_EQ(missing.code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(missing.message().find("attn.to_out.0.bias is missing"), std::string::npos) << missing.message();
  const Status extra = h3::pack_block(b, h3::packed_block_layout(full_.blocks[2])).status();
  EXPECT_NE(extra.message().find("attn.to_out.0.bias is not in the packed block layout"), std::string::npos)
      << extra.message();
}

TEST_F(H3Streamed, BadSetupsAreRefusedAndLeaveTheWeights) {
  h3::H3Weights parts = full_;
  Status s = h3::StreamedBlocks::create(parts, {true, true}, 2).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("2 entries for 5 transformer blocks"), std::string::npos) << s.message();
  EXPECT_EQ(h3::StreamedBlocks::create(parts, std::vector<bool>(5, true), 0).status().code(),
            ErrorCode::kInvalidArgument);

  parts.blocks[3].ff_out.weight = testing::random_normal({config_.hidden_size, 8}, 4);
  s = h3::StreamedBlocks::create(parts, std::vector<bool>(5, true), 2).status();
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(s.message().find("packing block 3 for streaming: ff.net.2.weight is f32[24, 8]"), std::string::npos)
      << s.message();
  EXPECT_TRUE(parts.blocks[0].norm1.defined());  // nothing was moved out

  // Blocks of a deeper model, and inputs the forward refuses before streaming anything.
  h3::H3Config deeper = config_;
  deeper.num_layers = 6;
  h3::H3Weights other = h3::random_weights(deeper, 1);
  auto other_blocks = h3::StreamedBlocks::create(other, std::vector<bool>(6, true), 2);
  ASSERT_TRUE(other_blocks.has_value());
  h3::H3Weights mine = full_;
  s = h3::forward_streamed(mine, **other_blocks, inputs_[0], tables_, false).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("5 transformer blocks, but 6 are streamed"), std::string::npos) << s.message();
  h3::H3Inputs bad = inputs_[0];
  bad.positions = Tensor();
  EXPECT_EQ(h3::forward_streamed(mine, **other_blocks, bad, tables_, false).status().code(), ErrorCode::kShapeMismatch);
  EXPECT_TRUE((*other_blocks)->stats().passes.empty());
}

TEST_F(H3Streamed, AFailedCopyNamesTheBlockAndTheNextStepRecovers) {
  std::atomic<bool> broken{true};
  weights::HostCopyOptions options;
  options.before_copy = [&](int block) {
    return block == 3 && broken.load() ? io_error("host tier page lost") : Status::ok();
  };
  h3::H3Weights parts = full_;
  auto blocks = h3::StreamedBlocks::create(parts, std::vector<bool>(5, true), 2, options);
  ASSERT_TRUE(blocks.has_value());
  const Status failed = h3::forward_streamed(parts, **blocks, inputs_[0], tables_, true).status();
  EXPECT_EQ(failed.code(), ErrorCode::kIo);
  EXPECT_NE(failed.message().find("streaming block 3 into staging slot 1: host tier page lost"), std::string::npos)
      << failed.message();
  broken = false;
  Expected<h3::H3Outputs> out = h3::forward_streamed(parts, **blocks, inputs_[1], tables_, false);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_TRUE(same_bytes(out->video, reference_[1].at("out.video")));
  EXPECT_TRUE(same_bytes(out->audio, reference_[1].at("out.audio")));
  EXPECT_EQ((*blocks)->stats().abandoned_passes, 1);
}

}  // namespace
}  // namespace orochi
