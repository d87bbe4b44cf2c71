// --precision in the planner (issue 25): the option's parsing, which H3 weights it quantizes, the
// denoiser's weight bytes per precision (codes + per-channel f32 scales for the block linears,
// everything else as in bf16), what that changes on a 24 GiB GPU, and `orochi plan --precision`.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/attention_fp8_layout.h"
#include "core/precision.h"
#include "engine/bench_streaming.h"
#include "engine/run_report.h"
#include "models/h3/parameters.h"
#include "planner/h3_denoiser_memory.h"
#include "planner/plan_memory.h"
#include "support/cli.h"
#include "support/planner_inputs.h"

namespace orochi::planner {
namespace {

h3::H3Config released() { return load_model_configs("h3")->transformer; }

std::map<std::string, uint64_t> group_bytes(const h3::H3Config& c, const ParallelLayout& layout, Precision p) {
  std::map<std::string, uint64_t> bytes;
  for (const WeightGroup& g : h3_weight_groups(c, layout, p)) bytes[g.name] = g.bytes;
  return bytes;
}

uint64_t aligned(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

TEST(Precision, ParsesItsThreeNames) {
  EXPECT_EQ(*parse_precision("bf16"), Precision::kBf16);
  EXPECT_EQ(*parse_precision("fp8"), Precision::kFp8);
  EXPECT_EQ(*parse_precision("int8"), Precision::kInt8);
  for (const char* bad : {"FP8", "fp16", "", "e4m3"}) {
    const Expected<Precision> p = parse_precision(bad);
    ASSERT_FALSE(p.has_value()) << bad;
    EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("bf16, fp8 or int8"), std::string::npos) << p.status().message();
  }
  EXPECT_EQ(precision_weight_dtype(Precision::kFp8), DType::kF8E4M3);
  EXPECT_EQ(precision_weight_dtype(Precision::kInt8), DType::kI8);
  EXPECT_EQ(precision_weight_dtype(Precision::kBf16), DType::kBF16);
}

TEST(Precision, QuantizesTheBlockLinearsOnly) {
  int quantized = 0;
  for (const h3::ParamSpec& spec : h3::h3_parameters(released()))
    if (h3::is_quantized_linear(spec.name)) {
      ++quantized;
      EXPECT_EQ(spec.shape.size(), 2u) << spec.name;
      EXPECT_TRUE(spec.name.starts_with("transformer_blocks.")) << spec.name;
    }
  EXPECT_EQ(quantized, 50 * 6);  // q, k, v, out, FFN in, FFN out of each block
  for (const char* kept : {"transformer_blocks.0.attn.norm_q.weight", "transformer_blocks.0.adaln_proj.linear.weight",
                           "token_refiner.refiner_blocks.0.attn.to_q.weight", "context_embedder.weight",
                           "proj_out.weight", "transformer_blocks.0.ff.net.0.proj.bias"})
    EXPECT_FALSE(h3::is_quantized_linear(kept)) << kept;
}

TEST(Precision, BlockWeightsAreCodesPlusScales) {
  const h3::H3Config c = released();
  const auto bf16 = group_bytes(c, ParallelLayout{}, Precision::kBf16);
  const auto fp8 = group_bytes(c, ParallelLayout{}, Precision::kFp8);
  const auto int8 = group_bytes(c, ParallelLayout{}, Precision::kInt8);
  EXPECT_EQ(fp8, int8);  // one byte per code either way
  // One block by hand: six linears as codes + scales; norm1, norm2 [H] and norm_q, norm_k [128] in bf16.
  const uint64_t H = 5376, I = 7168, F = 14336;
  const uint64_t linears = 3 * (aligned(I * H) + aligned(I * 4)) + aligned(H * I) + aligned(H * 4) +
                           aligned(2 * F * H) + aligned(2 * F * 4) + aligned(H * F) + aligned(H * 4);
  EXPECT_EQ(fp8.at("block 7"), linears + 2 * aligned(H * 2) + 2 * aligned(128 * 2));
  EXPECT_NEAR(static_cast<double>(fp8.at("block 7")) / static_cast<double>(bf16.at("block 7")), 0.5, 0.001);
  for (const char* same : {"embedders", "refiner", "heads", "adaln"}) EXPECT_EQ(fp8.at(same), bf16.at(same)) << same;
  // tp2 halves the block linears' codes and their rows (scales) alike.
  const auto fp8_tp2 = group_bytes(c, *parse_parallel_layout("tp2"), Precision::kFp8);
  EXPECT_NEAR(static_cast<double>(fp8_tp2.at("block 7")) / static_cast<double>(fp8.at("block 7")), 0.5, 0.001);
  uint64_t total_bf16 = 0, total_fp8 = 0;
  for (const auto& [name, bytes] : bf16) total_bf16 += name == "adaln" ? 0 : bytes;
  for (const auto& [name, bytes] : fp8) total_fp8 += name == "adaln" ? 0 : bytes;
  EXPECT_NEAR(to_gib(total_bf16), 37.44, 0.2);  // test_planner_pools' calibration
  EXPECT_LT(to_gib(total_fp8), 20.0);
  std::printf("resident denoiser weights: bf16 %.2f GiB, fp8/int8 %.2f GiB\n", to_gib(total_bf16), to_gib(total_fp8));
}

int streamed_blocks(const MemoryPlan& plan) {
  const Expected<std::vector<bool>> streamed = streamed_denoiser_blocks(plan, 50);
  EXPECT_TRUE(streamed.has_value()) << streamed.status().to_string();
  if (!streamed) return -1;
  int n = 0;
  for (bool s : *streamed) n += s;
  return n;
}

// What --precision is for: on a 24 GiB GPU the fp8 (or int8) denoiser keeps about twice the
// blocks resident, so fewer stream from host RAM each step.
TEST(Precision, A24GiBGpuKeepsMoreBlocksResident) {
  PlanInput in = testing::h3_plan_input(24);
  const MemoryPlan bf16 = testing::plan_or_fail(in);
  in.precision = Precision::kFp8;
  const MemoryPlan fp8 = testing::plan_or_fail(in);
  in.precision = Precision::kInt8;
  const MemoryPlan int8 = testing::plan_or_fail(in);
  ASSERT_TRUE(bf16.fits && fp8.fits);
  const int streamed_bf16 = streamed_blocks(bf16), streamed_fp8 = streamed_blocks(fp8);
  std::printf("24 GiB, 480p: %d of 50 blocks streamed in bf16, %d in fp8\n", streamed_bf16, streamed_fp8);
  EXPECT_GT(streamed_bf16, 0);
  EXPECT_LT(streamed_fp8, streamed_bf16 / 2 + 5);
  // int8's larger GEMM accumulator (QuantizedRunsPlanTheirActivationBuffers) may cost it a block.
  const int streamed_int8 = streamed_blocks(int8);
  EXPECT_GE(streamed_int8, streamed_fp8);
  EXPECT_LE(streamed_int8, streamed_fp8 + 2);
  EXPECT_LT(fp8.step_stream_s, bf16.step_stream_s);
}

// bench dit --vram-per-gpu plans its streamed blocks at the run's precision: at 768p on 24 GiB the
// fp8 blocks (half the bytes) stream far fewer than bf16's.
TEST(Precision, BenchStreamingPlansAtThePrecision) {
  const h3::H3Config c = released();
  Expected<engine::StreamingChoice> bf16 =
      engine::plan_streaming(c, "1344x768", 124, 256, 24, "host", 2, Precision::kBf16, /*fp8_attention=*/false);
  Expected<engine::StreamingChoice> fp8 =
      engine::plan_streaming(c, "1344x768", 124, 256, 24, "host", 2, Precision::kFp8, /*fp8_attention=*/false);
  ASSERT_TRUE(bf16.has_value() && fp8.has_value()) << bf16.status().to_string() << fp8.status().to_string();
  std::printf("24 GiB, 768p bench: %d of 50 blocks streamed in bf16, %d in fp8\n", bf16->count(), fp8->count());
  EXPECT_GT(fp8->count(), 0);
  EXPECT_LT(fp8->count(), bf16->count());
  // FP8 attention's codes (0.78 GiB at 768p) are planned too: the same cap keeps no more blocks.
  Expected<engine::StreamingChoice> attn =
      engine::plan_streaming(c, "1344x768", 124, 256, 24, "host", 2, Precision::kFp8, /*fp8_attention=*/true);
  ASSERT_TRUE(attn.has_value()) << attn.status().to_string();
  std::printf("24 GiB, 768p bench: %d blocks streamed in fp8 with FP8 attention\n", attn->count());
  EXPECT_GT(attn->count(), fp8->count());  // 17 vs 15
}

TEST(Precision, PlanCommandShowsAndChecksIt) {
  const testing::CliResult fp8 = testing::run_orochi("plan --res 480p --vram-per-gpu 24 --precision fp8");
  EXPECT_EQ(fp8.code, 0) << fp8.output;
  EXPECT_NE(fp8.output.find("precision: fp8 (the transformer blocks' linears as f8e4m3 codes + per-channel f32 "
                            "scales"),
            std::string::npos)
      << fp8.output;
  EXPECT_NE(fp8.output.find("; attention in FP8"), std::string::npos) << fp8.output;  // attention-precision=auto
  // Every pool of the denoiser phase on its own line, however long the one before it.
  EXPECT_NE(fp8.output.find("\n    scratch "), std::string::npos) << fp8.output;
  EXPECT_NE(fp8.output.find("\n    request state "), std::string::npos) << fp8.output;
  const testing::CliResult exact = testing::run_orochi("plan --res 480p --precision fp8 --set attention-precision=bf16");
  EXPECT_NE(exact.output.find("; attention in bf16"), std::string::npos) << exact.output;
  // As generate would take it: kernels=generic (or attention=cudnn) keeps attention bf16, and FP8
  // attention on several GPUs is refused.
  const testing::CliResult generic = testing::run_orochi("plan --res 480p --precision fp8 --set kernels=generic");
  EXPECT_NE(generic.output.find("; attention in bf16"), std::string::npos) << generic.output;
  const testing::CliResult two = testing::run_orochi("plan --res 480p --gpus 2 --set attention-precision=fp8");
  EXPECT_EQ(two.code, 1) << two.output;
  EXPECT_NE(two.output.find("FP8 attention runs on one GPU for now"), std::string::npos) << two.output;
  const testing::CliResult plain = testing::run_orochi("plan --res 480p");
  EXPECT_NE(plain.output.find("precision: bf16 (as released)\n"), std::string::npos) << plain.output;
  const testing::CliResult json = testing::run_orochi("plan --res 480p --precision int8 --json", false);
  EXPECT_EQ(json.code, 0) << json.output;
  EXPECT_NE(json.output.find("\"precision\": \"int8\""), std::string::npos) << json.output;
  EXPECT_NE(json.output.find("\"attention_precision\": \"bf16\""), std::string::npos) << json.output;
  const testing::CliResult bad = testing::run_orochi("plan --precision fp16");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--precision takes bf16, fp8 or int8, got 'fp16'"), std::string::npos) << bad.output;
}

// FP8 attention's workspace is the kernel's codes and scales for the main attention over all rows
// (core/attention_fp8_layout.h), ~(3 S) x heads x 128 bytes: 0.3 GiB at 480p, 0.8 GiB at 768p.
TEST(Precision, Fp8AttentionPlansItsCodesAndScales) {
  const h3::H3Config c = released();
  for (const int64_t rows : {int64_t{15100}, int64_t{37966}}) {  // 480p and 768p, 124 frames, 256 text rows
    RequestShape s;
    s.rows = rows, s.text_rows = 256, s.video_rows = rows - 670, s.audio_rows = 414, s.timesteps = 2;
    auto workspace = [&](bool fp8_attention) {
      for (const BufferBytes& b : h3_request_buffers(c, s, ParallelLayout{}, {}, Precision::kFp8, fp8_attention))
        if (b.name.find("attention workspace") != std::string::npos) return b;
      return BufferBytes{};
    };
    const BufferBytes exact = workspace(false), fp8 = workspace(true);
    const int64_t want = fp8_attention::fp8_attention_layout(c.num_attention_heads, s.rows, s.rows).bytes;
    std::printf("S = %lld: attention workspace bf16 %.3f GiB, fp8 %.3f GiB\n", static_cast<long long>(rows),
                exact.bytes / double(1 << 30), fp8.bytes / double(1 << 30));
    EXPECT_EQ(fp8.bytes, aligned(static_cast<uint64_t>(want)) + 256) << rows;
    EXPECT_EQ(fp8.name, "attention workspace (FP8 codes and scales)");
    EXPECT_GT(fp8.bytes, exact.bytes) << rows;
  }
}

// The quantized forward's request buffers (h3::gpu::arena_buffers, which the runner allocates and
// the planner adds up): a block linear's input as codes + per-token scales, and the GEMM's
// accumulator in row chunks (int8 always dequantizes in our epilogue: 4096 rows; fp8 only where
// cuBLASLt refuses outer-vector scales: 1024); bf16 has none of them.
TEST(Precision, QuantizedRunsPlanTheirActivationBuffers) {
  const h3::H3Config c = released();
  RequestShape shape;
  shape.rows = 37966, shape.text_rows = 256, shape.video_rows = 37296, shape.audio_rows = 414, shape.timesteps = 2;
  auto buffers = [&](Precision p) {
    std::map<std::string, uint64_t> bytes;
    for (const BufferBytes& b : h3_request_buffers(c, shape, ParallelLayout{}, {}, p, /*fp8_attention=*/false))
      bytes[b.name.substr(0, b.name.find(' '))] += b.bytes;
    return bytes;
  };
  const auto bf16 = buffers(Precision::kBf16), fp8 = buffers(Precision::kFp8), int8 = buffers(Precision::kInt8);
  EXPECT_EQ(bf16.count("xq_codes") + bf16.count("xq_scales") + bf16.count("xq_acc"), 0u);
  const uint64_t R = 37966, widest_in = 14336, widest_out = 2 * 14336;
  for (const auto* q : {&fp8, &int8}) {
    EXPECT_EQ(q->at("xq_codes"), aligned(R * widest_in));
    EXPECT_EQ(q->at("xq_scales"), aligned(R * 4));
  }
  EXPECT_EQ(fp8.at("xq_acc"), aligned(1024 * widest_out * 4));
  EXPECT_EQ(int8.at("xq_acc"), aligned(4096 * widest_out * 4));
  EXPECT_EQ(fp8.at("cuBLASLt"), 2 * bf16.at("cuBLASLt"));  // the quantized GEMMs' own workspace
}

// fp8 / int8 run the GPU denoiser's quantized linears (tests/cuda/test_h3_gpu_precision); the CPU
// path is the f32 reference and refuses them by name; bench dit takes them (here: no GPU to run on).
TEST(Precision, TheCpuRefusesQuantizedRuns) {
  for (const char* cmd : {"generate --precision fp8", "generate --precision int8 --device cpu"}) {
    const testing::CliResult r = testing::run_orochi(cmd);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("runs the denoiser's quantized linears on a GPU"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("--device cuda"), std::string::npos) << cmd << "\n" << r.output;
  }
  // FP8 attention alone (bf16 linears) is the GPU's too, and one GPU's for now: refused before any weight.
  const testing::CliResult attention = testing::run_orochi("generate --set attention-precision=fp8");
  EXPECT_EQ(attention.code, 1) << attention.output;
  EXPECT_NE(attention.output.find("attention-precision=fp8 runs Orochi's FP8 attention kernel on a Hopper GPU"),
            std::string::npos)
      << attention.output;
  const testing::CliResult bench = testing::run_orochi("bench dit --precision int8");
  EXPECT_EQ(bench.code, 1) << bench.output;
  EXPECT_EQ(bench.output.find("bf16 only"), std::string::npos) << bench.output;
  for (const char* cmd : {"generate --precision fp16", "bench dit --precision FP8", "serve --precision e4m3"}) {
    const testing::CliResult r = testing::run_orochi(cmd);
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("--precision takes bf16, fp8 or int8"), std::string::npos) << cmd << "\n" << r.output;
  }
  EXPECT_EQ(engine::report_json(engine::RunReport{})["precision"], "bf16");  // the stage report records it
}

}  // namespace
}  // namespace orochi::planner
