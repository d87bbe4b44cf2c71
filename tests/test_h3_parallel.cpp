// Tensor- and sequence-parallel H3 forward on in-process CPU ranks against the one-rank forward:
// TP2, TP4, SP2, SP3 (uneven rows), TP2 x SP2 and SP4 on a small random model whose FFN width
// splits unevenly, and TP8, SP8, TP2 x SP4, TP4 x SP2 with 16 heads; every rank returns the same outputs. Plus the shard rules, bad layouts and a
// stalled rank, and a LoRA merged before slicing or sliced unmerged.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "dist/cpu_comm.h"
#include "dist/workers.h"
#include "models/h3/lora.h"
#include "models/h3/parallel_forward.h"
#include "models/h3/parallel_shard.h"
#include "models/h3/tensor_parallel.h"
#include "support/compare.h"
#include "support/h3_inputs.h"
#include "support/random.h"

namespace orochi {
namespace {

using dist::CpuCommGroup;

h3::H3Config small_config() {
  h3::H3Config c = h3::H3Config::tiny_demo();
  c.num_attention_heads = 12;  // TP 2 or 4, then SP 2 or 3; SP alone up to 4
  c.hidden_size = 24;
  c.num_layers = 2;
  c.num_refiner_layers = 1;
  c.ffn_dim = 37;  // uneven over 2 and 4 ranks
  c.audio_in_channels = 6;
  c.text_dim = 8;
  c.freq_dim = 8;
  c.time_embed_hidden_dim = 24;
  c.time_embed_dim = 16;
  return c;
}

// 37 packed rows (5 text, 8 audio, 24 video) in a shuffled order, so every SP share mixes
// modalities, with two timesteps.
h3::H3Inputs small_inputs(const h3::H3Config& c) {
  const int64_t nt = 5, na = 8, nv = 24, S = nt + na + nv;
  std::vector<int64_t> order(S);
  for (int64_t i = 0; i < S; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  testing::PackedRows rows;
  rows.text.assign(order.begin(), order.begin() + nt);
  rows.audio.assign(order.begin() + nt, order.begin() + nt + na);
  rows.video.assign(order.begin() + nt + na, order.end());
  std::mt19937 rng(11);
  for (int64_t s = 0; s < S; ++s) rows.timestep_index.push_back(rng() % 2);
  for (int64_t i = 0; i < 3 * S; ++i) rows.positions.push_back(static_cast<float>(rng() % 9));
  return testing::h3_inputs(c, rows, 0);
}

struct RankResults {
  std::vector<Status> status;      // per world rank
  std::vector<h3::H3Outputs> out;  // per world rank
  std::vector<double> seconds;
};

// World rank w is TP rank w % tp and SP rank w / tp: TP groups hold consecutive world ranks
// ({0,1},{2,3} for 2 x 2), SP groups the ranks with the same TP rank ({0,2},{1,3}).
RankResults run_parallel(const h3::H3Weights& full, const h3::H3Inputs& in, const h3::ModulationTables& tables, int tp,
                         int sp, dist::CommOptions tp_options = {}, dist::CommOptions sp_options = {}) {
  tp_options.name = "tp";
  sp_options.name = "sp";
  std::vector<h3::H3Weights> shards;
  for (int t = 0; t < tp; ++t) {
    Expected<h3::H3Weights> shard = h3::shard_weights(full, t, tp);
    EXPECT_TRUE(shard.has_value()) << shard.status().to_string();
    if (!shard) return {};
    shards.push_back(std::move(shard).value());
  }
  std::vector<std::shared_ptr<CpuCommGroup>> tp_groups, sp_groups;
  for (int s = 0; s < sp; ++s) tp_groups.push_back(CpuCommGroup::create(tp, tp_options));
  for (int t = 0; t < tp; ++t) sp_groups.push_back(CpuCommGroup::create(sp, sp_options));
  const int world = tp * sp;
  std::vector<std::unique_ptr<dist::Comm>> tp_of(world), sp_of(world);
  for (int w = 0; w < world; ++w) {
    tp_of[w] = tp_groups[w / tp]->member(w % tp);
    sp_of[w] = sp_groups[w % tp]->member(w / tp);
  }
  RankResults run;
  run.out.resize(world);
  run.seconds.resize(world);
  run.status = dist::Workers(world).run([&](int w) {
    const auto start = std::chrono::steady_clock::now();
    Expected<h3::H3Outputs> out = h3::forward_parallel(shards[w % tp], in, tables, {tp_of[w].get(), sp_of[w].get()});
    run.seconds[w] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!out) return out.status();
    run.out[w] = std::move(out).value();
    return Status::ok();
  });
  return run;
}

class H3Parallel : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(config_.validate().is_ok());
    full_ = h3::random_weights(config_, 5);
    in_ = small_inputs(config_);
    tables_ = h3::compute_modulation_tables(full_, Tensor::from_floats({0.25f, 0.75f}, {2}));
    Expected<h3::H3Outputs> ref = h3::forward(full_, in_, tables_);
    ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
    reference_ = std::move(ref).value();
  }

  // Every rank matches the one-rank forward within the bound, and all ranks agree exactly.
  void expect_matches_reference(int tp, int sp) {
    SCOPED_TRACE("tp " + std::to_string(tp) + " x sp " + std::to_string(sp));
    const RankResults run = run_parallel(full_, in_, tables_, tp, sp);
    ASSERT_EQ(run.status.size(), static_cast<size_t>(tp * sp));
    for (size_t w = 0; w < run.status.size(); ++w) {
      ASSERT_TRUE(run.status[w].is_ok()) << "rank " << w << ": " << run.status[w].to_string();
      EXPECT_TENSOR_CLOSE(run.out[w].video, reference_.video, 1e-6);
      EXPECT_TENSOR_CLOSE(run.out[w].audio, reference_.audio, 1e-6);
      EXPECT_TENSOR_CLOSE(run.out[w].video, run.out[0].video, 0.0);
      EXPECT_TENSOR_CLOSE(run.out[w].audio, run.out[0].audio, 0.0);
    }
    std::printf("  tp %d x sp %d: video %s\n", tp, sp,
                testing::compare(run.out[0].video, reference_.video).summary().c_str());
  }

  h3::H3Config config_ = small_config();
  h3::H3Weights full_;
  h3::H3Inputs in_;
  h3::ModulationTables tables_;
  h3::H3Outputs reference_;
};

TEST_F(H3Parallel, TensorParallelMatchesOneRank) {
  expect_matches_reference(2, 1);
  expect_matches_reference(4, 1);
}

TEST_F(H3Parallel, SequenceParallelMatchesOneRankWithUnevenRows) {
  expect_matches_reference(1, 2);  // 19 + 18 rows
  expect_matches_reference(1, 3);  // 13 + 12 + 12
  expect_matches_reference(1, 4);  // 10 + 9 + 9 + 9
}

TEST_F(H3Parallel, TensorTimesSequenceParallelMatchesOneRank) {
  expect_matches_reference(2, 2);
  expect_matches_reference(2, 3);
}

// The layouts of the 4- and 8-GPU scaling runs (issue 7) on 8 CPU ranks: 16 heads.
class H3ParallelEightRanks : public H3Parallel {
 protected:
  H3ParallelEightRanks() { config_.num_attention_heads = 16; }
};

TEST_F(H3ParallelEightRanks, EveryEightRankLayoutMatchesOneRank) {
  expect_matches_reference(8, 1);
  expect_matches_reference(1, 8);  // 37 rows: 5 + 7 x 4
  expect_matches_reference(2, 4);
  expect_matches_reference(4, 2);
}

TEST_F(H3Parallel, RowSplitBiasesAreAddedOnce) {
  // H3's block linears have no biases; give every one of them a bias so the rank-0 rule is tested.
  uint64_t seed = 100;
  for (std::vector<h3::BlockWeights>* blocks : {&full_.refiner, &full_.blocks})
    for (h3::BlockWeights& b : *blocks)
      for (h3::LinearWeights* l : {&b.attn.to_q, &b.attn.to_k, &b.attn.to_v, &b.attn.to_out, &b.ff_in, &b.ff_out})
        l->bias = testing::random_normal({l->weight.dim(0)}, seed++, 0.05f);
  reference_ = *h3::forward(full_, in_, tables_);
  expect_matches_reference(2, 1);
  expect_matches_reference(4, 1);
}

// A LoRA on every linear (issue 24): merged into the full weights before slicing, TP2 and TP4 equal
// one rank with the same merge; attached unmerged (PEFT's semantics), shard_weights slices each
// adapter by its layer's rule (B's rows, or A's columns of a column-split layer) and TP2 / TP4 equal
// one rank's unmerged forward, which equals the merged one.
TEST_F(H3Parallel, LoraMergedBeforeSlicingOrSlicedUnmergedMatchesOneRank) {
  h3::H3Lora lora;
  lora.path = "in-memory";
  uint64_t seed = 300;
  for (auto& [name, layer] : h3::linear_layers(full_)) {
    const int64_t rank = 1 + static_cast<int64_t>(seed % 4);
    lora.deltas.push_back(h3::LoraDelta{name, name, testing::random_normal({rank, layer->weight.dim(1)}, seed, 0.3f),
                                        testing::random_normal({layer->weight.dim(0), rank}, seed + 1, 0.3f),
                                        2.0f / static_cast<float>(rank)});
    seed += 2;
  }
  const h3::H3Weights base = full_;
  const Tensor timesteps = Tensor::from_floats({0.25f, 0.75f}, {2});
  h3::H3Weights merged = base, unmerged = base;
  ASSERT_TRUE(h3::merge_lora(merged, lora, 0.8f).is_ok());
  ASSERT_TRUE(h3::attach_lora(unmerged, lora, 0.8f).is_ok());
  const h3::H3Outputs merged_out = *h3::forward(merged, in_, h3::compute_modulation_tables(merged, timesteps));
  EXPECT_GT(testing::compare(merged_out.video, reference_.video).rel_l2, 0.05);  // the LoRA matters

  full_ = merged;
  tables_ = h3::compute_modulation_tables(full_, timesteps);
  reference_ = merged_out;
  expect_matches_reference(2, 1);
  expect_matches_reference(4, 1);

  full_ = unmerged;
  tables_ = h3::compute_modulation_tables(full_, timesteps);
  reference_ = *h3::forward(full_, in_, tables_);
  EXPECT_TENSOR_CLOSE(reference_.video, merged_out.video, 1e-5);
  EXPECT_TENSOR_CLOSE(reference_.audio, merged_out.audio, 1e-5);
  expect_matches_reference(2, 1);
  expect_matches_reference(4, 1);
  // Each TP-4 rank holds its quarter of the adapters of block 0's column-split to_out and row-split ff_in.
  const h3::H3Weights shard = *h3::shard_weights(full_, 1, 4);
  const h3::LinearWeights &to_out = shard.blocks[0].attn.to_out, &ff_in = shard.blocks[0].ff_in;
  ASSERT_EQ(to_out.adapters.size(), 1u);
  EXPECT_EQ(to_out.adapters[0].down.dim(1), config_.inner_dim() / 4);
  EXPECT_EQ(to_out.adapters[0].up.dim(0), config_.hidden_size);
  ASSERT_EQ(ff_in.adapters.size(), 1u);
  EXPECT_EQ(ff_in.adapters[0].up.dim(0), 2 * dist::even_share(config_.ffn_dim, 4, 1).size());
  EXPECT_EQ(ff_in.adapters[0].down.dim(1), config_.hidden_size);
}

TEST_F(H3Parallel, EachRankHoldsItsShareOfEveryBlockLinear) {
  for (int tp : {2, 4}) {
    int64_t attention = 0, ffn = 0;
    for (int t = 0; t < tp; ++t) {
      Expected<h3::H3Weights> shard = h3::shard_weights(full_, t, tp);
      ASSERT_TRUE(shard.has_value()) << shard.status().to_string();
      const dist::Range f = dist::even_share(config_.ffn_dim, tp, t);
      for (size_t i = 0; i < full_.blocks.size() + full_.refiner.size(); ++i) {
        const bool refiner = i < full_.refiner.size();
        const h3::BlockWeights& b = refiner ? shard->refiner[i] : shard->blocks[i - full_.refiner.size()];
        const h3::BlockWeights& whole = refiner ? full_.refiner[i] : full_.blocks[i - full_.refiner.size()];
        EXPECT_EQ(b.attn.to_q.weight.shape(), (Shape{config_.inner_dim() / tp, config_.hidden_size}));
        EXPECT_EQ(b.attn.to_out.weight.shape(), (Shape{config_.hidden_size, config_.inner_dim() / tp}));
        EXPECT_EQ(b.ff_in.weight.shape(), (Shape{2 * f.size(), config_.hidden_size}));
        EXPECT_EQ(b.ff_out.weight.shape(), (Shape{config_.hidden_size, f.size()}));
        attention += b.attn.to_q.weight.numel() + b.attn.to_k.weight.numel() + b.attn.to_v.weight.numel() +
                     b.attn.to_out.weight.numel();
        ffn += b.ff_in.weight.numel() + b.ff_out.weight.numel();
        // The SwiGLU slice pairs value row f.begin with gate row F + f.begin.
        const int64_t H = config_.hidden_size;
        EXPECT_EQ(b.ff_in.weight.data<float>()[0], whole.ff_in.weight.data<float>()[f.begin * H]);
        EXPECT_EQ(b.ff_in.weight.data<float>()[f.size() * H],
                  whole.ff_in.weight.data<float>()[(config_.ffn_dim + f.begin) * H]);
        // Replicated: the AdaLN projection and the norms are the full model's tensors.
        if (!refiner) {
          EXPECT_EQ(b.adaln.weight.raw_data(), whole.adaln.weight.raw_data());
        }
        EXPECT_EQ(b.norm1.raw_data(), whole.norm1.raw_data());
      }
    }
    const int64_t blocks = config_.num_layers + config_.num_refiner_layers;
    EXPECT_EQ(attention, blocks * 4 * config_.inner_dim() * config_.hidden_size) << "tp " << tp;
    EXPECT_EQ(ffn, blocks * 3 * config_.ffn_dim * config_.hidden_size) << "tp " << tp;
  }
}

TEST_F(H3Parallel, LayoutsThatDoNotDivideAreRefused) {
  const Status five = h3::shard_weights(full_, 0, 5).status();
  EXPECT_EQ(five.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(five.message().find("12 attention heads to split evenly; use one of: 1, 2, 3, 4, 6, 12"), std::string::npos)
      << five.to_string();
  EXPECT_EQ(h3::shard_weights(full_, 2, 2).status().code(), ErrorCode::kInvalidArgument);

  // TP 2 leaves 6 heads per rank: SP 4 cannot split them; every rank says so.
  const RankResults run = run_parallel(full_, in_, tables_, 2, 4);
  ASSERT_EQ(run.status.size(), 8u);
  for (const Status& s : run.status) {
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.message().find("6 heads of each tensor-parallel rank to split evenly; use one of: 1, 2, 3, 6"),
              std::string::npos)
        << s.to_string();
  }

  // A TP-2 shard used in a group of one.
  const h3::H3Weights half = *h3::shard_weights(full_, 0, 2);
  const Status mismatch = h3::forward_parallel(half, in_, tables_, {}).status();
  EXPECT_EQ(mismatch.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(mismatch.message().find("shard_weights(full, 0, 1)"), std::string::npos) << mismatch.to_string();

  // Bad inputs are caught by validate_inputs before any communication.
  h3::H3Inputs bad = in_;
  bad.token_tags = Tensor::from_ints(std::vector<int64_t>(in_.rows(), 7), {in_.rows()});
  EXPECT_EQ(h3::forward_parallel(full_, bad, tables_, {}).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(H3Parallel, StalledRankEndsEveryRankWithADeadline) {
  dist::CommOptions tp_options;
  tp_options.deadline = std::chrono::milliseconds(300);
  tp_options.fault = {dist::FaultInjection::Kind::kStall, 1, 3};  // block 0's FFN all_reduce
  RankResults run = run_parallel(full_, in_, tables_, 2, 1, tp_options);
  ASSERT_EQ(run.status.size(), 2u);
  for (int w = 0; w < 2; ++w) {
    const Status& s = run.status[w];
    EXPECT_EQ(s.code(), ErrorCode::kDeadline) << s.to_string();
    for (const char* part : {"block 0", "'tp'", "all_reduce call #3", "rank 1 did not arrive"})
      EXPECT_NE(s.message().find(part), std::string::npos) << part << " missing from " << s.message();
    EXPECT_LT(run.seconds[w], 2.3);
  }

  // In the SP group the first exchange is the query all_to_all of block 0.
  dist::CommOptions sp_options;
  sp_options.deadline = std::chrono::milliseconds(300);
  sp_options.fault = {dist::FaultInjection::Kind::kStall, 0, 0};
  run = run_parallel(full_, in_, tables_, 1, 2, {}, sp_options);
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(run.status[w].code(), ErrorCode::kDeadline) << run.status[w].to_string();
    EXPECT_NE(run.status[w].message().find("'sp' (2 ranks): all_to_all call #0"), std::string::npos)
        << run.status[w].message();
    EXPECT_NE(run.status[w].message().find("rank 0 did not arrive"), std::string::npos) << run.status[w].message();
    EXPECT_LT(run.seconds[w], 2.3);
  }
}

// The released H3 (H 5376, 56 x 128 heads): gathering the attention input's rows moves fewer bytes
// only at SP2 without TP (5376 vs 10752 values per row); SP4 and TP2 x SP2 break even, SP8 doubles.
TEST(H3SpQkvScheme, GathersRowsOnlyWhereThatMovesFewerBytes) {
  const h3::H3Config c;
  EXPECT_EQ(h3::fewer_bytes_sp_qkv(c, 1, 2), h3::SpQkvScheme::kGatherRows);
  EXPECT_EQ(h3::fewer_bytes_sp_qkv(c, 2, 2), h3::SpQkvScheme::kHeadChunks);
  EXPECT_EQ(h3::fewer_bytes_sp_qkv(c, 1, 4), h3::SpQkvScheme::kHeadChunks);
  EXPECT_EQ(h3::fewer_bytes_sp_qkv(c, 1, 8), h3::SpQkvScheme::kHeadChunks);
}

// SP rows by weight: contiguous shares that cover every row once, in proportion, the same as the
// even split when no weights are given; OROCHI_SP_WEIGHTS' parser refuses what it cannot use.
TEST(H3SpRowShares, FollowTheWeightsAndCoverEveryRow) {
  h3::ParallelRank rank{0, 1, 0, 2};
  for (int64_t rows : {1, 7, 37966}) {
    const std::vector<dist::Range> even = h3::sp_row_shares(rows, rank);
    ASSERT_EQ(even.size(), 2u);
    EXPECT_EQ(even[0].size(), dist::even_share(rows, 2, 0).size());
    EXPECT_EQ(even[1].end, rows);
  }
  rank.sp_weights = {1.02, 0.98};
  std::vector<dist::Range> weighted = h3::sp_row_shares(37966, rank);
  EXPECT_EQ(weighted[0].begin, 0);
  EXPECT_EQ(weighted[0].end, 19363);  // 37966 * 1.02 / 2 = 19362.66
  EXPECT_EQ(weighted[1].begin, weighted[0].end);
  EXPECT_EQ(weighted[1].end, 37966);
  rank.sp_size = 4;
  rank.sp_weights = {1, 2, 1, 1};
  weighted = h3::sp_row_shares(10, rank);
  EXPECT_EQ(weighted[0].end, 2);
  EXPECT_EQ(weighted[1].end, 6);
  EXPECT_EQ(weighted[2].end, 8);
  EXPECT_EQ(weighted[3].end, 10);

  EXPECT_EQ(h3::sp_weights_problem({1, 0.98}, 2), "");
  for (const std::vector<double>& bad : std::vector<std::vector<double>>{{1}, {1, 1, 1}, {1, 0}, {1, -1}, {1, 0.2}})
    EXPECT_NE(h3::sp_weights_problem(bad, 2), "") << bad.size() << " weights, the last " << bad.back();
  EXPECT_NE(h3::sp_weights_problem({1, std::nan("")}, 2), "");

}

}  // namespace
}  // namespace orochi
