// The Qwen3-VL conditioner on one GPU over H3 ref2va presentations (issue 22): the GPU vision tower
// feeding the mixed-sequence text stack, with the counter-based random weights of
// models/qwen3vl/random_weights.h.
//
// Always (on a GPU): the GPU fills (GpuVisionTower::init_random, GpuTextEncoder::init_random) give
// the same model as the host statement of the rules uploaded, on the tiny shapes over the tiny
// presentation; and the GPU tower + stack stay within the bf16 band of the CPU reference there.
//
// With OROCHI_QWEN3VL_FULL_DIR=DIR (scripts/device/compare_qwen3vl_presentation.sh): the release's
// shapes (27-block tower, 50 of the 32B stack's layers), per case of OROCHI_QWEN3VL_FULL_CASES
// (default ref2va-2img,ref2va-4img,text-1000): the presentation built from synthetic media by the
// real processor and builder, timed over OROCHI_QWEN3VL_FULL_ITERS runs (default 3) after
// OROCHI_QWEN3VL_FULL_WARMUP (default 1), from host bf16 pixel values and ids to the host f32
// residual after layer 50 (rope_index, the pixel upload, the tower, the stack and the download
// included); then a 2-layer stack with the same weights gives hidden_states[2]. Writes
// DIR/<case>.safetensors (inputs and both outputs) and DIR/<case>.json (times), and prints one
// "[presentation-full] {json}" line per case. OROCHI_QWEN3VL_FULL_SEED (default 7).
// OROCHI_QWEN3VL_FULL_PRECISIONS (default bf16), e.g. bf16,fp8: after the bf16 stack, the same
// weights' stack at each other precision (--set conditioner-precision) over the same cases, its
// outputs in DIR/<case>.<precision>.safetensors and its times in DIR/<case>.<precision>.json.
// OROCHI_QWEN3VL_FULL_NO_DUMP=1: times only (DIR/<case>.json), no safetensors dump and no 2-layer
// stack (scripts/device/run_ref2va_preprocess_compare.sh: the ref2va-bench case beside diffusers).
// Each case's JSON also has processor_s: our processor and presentation builder on the host (what
// diffusers' "processor" part covers), timed once when the presentation is built, outside total_s.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/device_memory.h"
#include "core/precision.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "models/qwen3vl/cuda/gpu_vision_tower.h"
#include "models/qwen3vl/random_weights.h"
#include "models/qwen3vl/rope_index.h"
#include "support/compare.h"
#include "support/qwen3vl_presentation.h"
#include "weights/safetensors_writer.h"

namespace orochi::testing {
namespace {

#define REQUIRE_GPU() \
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU"

TEST(Qwen3VLPresentationGpu, RandomInitIsTheHostRulesAndMatchesTheCpu) {
  REQUIRE_GPU();
  const BuiltPresentation p = *build_presentation(*presentation_case("tiny"));
  const qwen3vl::VisionConfig vc = tiny_vision_config();
  const qwen3vl::TextConfig tc = tiny_text_config();
  constexpr uint64_t kSeed = 11;
  constexpr int64_t kLayers = 4;
  const int64_t N = p.pixel_values.dim(0);

  auto filled = qwen3vl::gpu::GpuVisionTower::create(vc, 0, N);
  auto uploaded = qwen3vl::gpu::GpuVisionTower::create(vc, 0, N);
  ASSERT_TRUE(filled.has_value() && uploaded.has_value());
  ASSERT_TRUE((*filled)->init_random(kSeed).is_ok());
  const qwen3vl::VisionWeights host_vision = qwen3vl::random_vision_weights(vc, kSeed);
  ASSERT_TRUE((*uploaded)->upload(host_vision).is_ok());
  Expected<qwen3vl::VisionFeatures> a = (*filled)->run(p.pixel_values, p.grids());
  Expected<qwen3vl::VisionFeatures> b = (*uploaded)->run(p.pixel_values, p.grids());
  ASSERT_TRUE(a.has_value() && b.has_value()) << a.status().to_string();
  const Comparison tower_same = compare(a->features, b->features);
  std::printf("tower: init_random vs upload(random_vision_weights) %s\n", tower_same.summary().c_str());
  EXPECT_TRUE(tower_same.same_nonfinite && tower_same.rel_l2 <= 1e-5) << tower_same.summary();

  auto enc_filled = qwen3vl::gpu::GpuTextEncoder::create(tc, kLayers, 0, p.size());
  auto enc_uploaded = qwen3vl::gpu::GpuTextEncoder::create(tc, kLayers, 0, p.size());
  ASSERT_TRUE(enc_filled.has_value() && enc_uploaded.has_value());
  ASSERT_TRUE((*enc_filled)->init_random(kSeed).is_ok());
  const qwen3vl::TextWeights host_text = qwen3vl::random_text_weights(tc, kLayers, kSeed);
  ASSERT_TRUE((*enc_uploaded)->upload(host_text).is_ok());
  const qwen3vl::VisionEmbeddings vision = presentation_vision(p, *a);
  Expected<Tensor> x = (*enc_filled)->encode(p.input_ids, p.positions, vision);
  Expected<Tensor> y = (*enc_uploaded)->encode(p.input_ids, p.positions, vision);
  ASSERT_TRUE(x.has_value() && y.has_value()) << x.status().to_string();
  const Comparison text_same = compare(*x, *y);
  std::printf("text stack: init_random vs upload(random_text_weights) %s\n", text_same.summary().c_str());
  EXPECT_TRUE(text_same.same_nonfinite && text_same.rel_l2 <= 1e-5) << text_same.summary();

  // Tower on the GPU (outputs left there) into the stack vs the CPU fp32 reference.
  Expected<qwen3vl::VisionFeatures> on_device = (*filled)->run_on_device(p.pixel_values, p.grids());
  ASSERT_TRUE(on_device.has_value());
  Expected<Tensor> gpu = (*enc_filled)->encode(p.input_ids, p.positions, presentation_vision(p, *on_device));
  Expected<qwen3vl::VisionFeatures> cpu_vision = qwen3vl::run_vision_tower(host_vision, p.pixel_values, p.grids());
  ASSERT_TRUE(gpu.has_value() && cpu_vision.has_value());
  Expected<Tensor> cpu = qwen3vl::encode_mixed(host_text, p.input_ids, p.positions, presentation_vision(p, *cpu_vision));
  ASSERT_TRUE(cpu.has_value());
  const Comparison vs_cpu = compare(*gpu, *cpu);
  std::printf("tiny presentation, GPU tower + stack (bf16) vs CPU fp32 %s\n", vs_cpu.summary().c_str());
  EXPECT_TRUE(vs_cpu.same_nonfinite && vs_cpu.rel_l2 <= 2e-2) << vs_cpu.summary();
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::stoll(v) : fallback;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double gpu_used_gib() {
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  return static_cast<double>(total - free) / (1 << 30);
}

bool finite(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.data<float>()[i])) return false;
  return true;
}

TEST(Qwen3VLPresentationGpu, FullSizePresentationsDumpedAndTimed) {
  REQUIRE_GPU();
  const char* dir_env = std::getenv("OROCHI_QWEN3VL_FULL_DIR");
  if (!dir_env || !*dir_env) GTEST_SKIP() << "OROCHI_QWEN3VL_FULL_DIR not set (scripts/device/compare_qwen3vl_presentation.sh)";
  const std::string dir = dir_env;
  const char* cases_env = std::getenv("OROCHI_QWEN3VL_FULL_CASES");
  const std::string cases_list = cases_env && *cases_env ? cases_env : "ref2va-2img,ref2va-4img,text-1000";
  const int64_t warmup = env_int("OROCHI_QWEN3VL_FULL_WARMUP", 1), iters = env_int("OROCHI_QWEN3VL_FULL_ITERS", 3);
  const uint64_t seed = static_cast<uint64_t>(env_int("OROCHI_QWEN3VL_FULL_SEED", 7));
  const bool dump = env_int("OROCHI_QWEN3VL_FULL_NO_DUMP", 0) == 0;
  constexpr int64_t kLayers = 50, kTextOnlyTokens = 1000;
  const qwen3vl::VisionConfig vc = qwen3vl::VisionConfig::qwen3vl_32b();
  const qwen3vl::TextConfig tc = qwen3vl::TextConfig::qwen3vl_32b();

  // The presentations first (host work, untimed: the processor is not part of either side's time).
  std::vector<std::string> names;
  std::stringstream ss(cases_list);
  for (std::string n; std::getline(ss, n, ',');) names.push_back(n);
  std::vector<std::optional<BuiltPresentation>> built;
  int64_t max_tokens = 1, max_patches = vc.merge_unit();
  for (const std::string& n : names) {
    if (n == "text-1000") {
      built.emplace_back();
      max_tokens = std::max(max_tokens, kTextOnlyTokens);
      continue;
    }
    Expected<PresentationCase> c = presentation_case(n);
    ASSERT_TRUE(c.has_value()) << c.status().to_string();
    const auto t0 = std::chrono::steady_clock::now();
    Expected<BuiltPresentation> p = build_presentation(*c);
    ASSERT_TRUE(p.has_value()) << p.status().to_string();
    std::fprintf(stderr, "[presentation-full] %s: %lld tokens, %lld patches, built in %.2f s (processor + builder "
                 "%.3f s)\n", n.c_str(), static_cast<long long>(p->size()), static_cast<long long>(p->pixel_values.dim(0)),
                 seconds_since(t0), p->processor_s);
    max_tokens = std::max(max_tokens, p->size());
    max_patches = std::max(max_patches, p->pixel_values.dim(0));
    built.emplace_back(std::move(p).value());
  }

  const auto t_init = std::chrono::steady_clock::now();
  auto tower = qwen3vl::gpu::GpuVisionTower::create(vc, 0, max_patches);
  ASSERT_TRUE(tower.has_value()) << tower.status().to_string();
  ASSERT_TRUE((*tower)->init_random(seed).is_ok());
  std::fprintf(stderr, "[presentation-full] tower generated in %.2f s\n", seconds_since(t_init));

  // bf16 first (its dumps carry the inputs), then each other text-stack precision asked for, each
  // pair of stacks freed before the next is made (the same seed: the quantization of the same
  // weights). The tower stays bf16.
  std::vector<Precision> precisions = {Precision::kBf16};
  const char* precisions_env = std::getenv("OROCHI_QWEN3VL_FULL_PRECISIONS");
  std::stringstream ps(precisions_env && *precisions_env ? precisions_env : "bf16");
  for (std::string n; std::getline(ps, n, ',');) {
    Expected<Precision> parsed = parse_precision(n);
    ASSERT_TRUE(parsed.has_value()) << "OROCHI_QWEN3VL_FULL_PRECISIONS: " << parsed.status().to_string();
    if (std::find(precisions.begin(), precisions.end(), *parsed) == precisions.end()) precisions.push_back(*parsed);
  }
  for (const Precision precision : precisions) {
    const bool bf16 = precision == Precision::kBf16;
    const std::string tag = bf16 ? "" : std::string(".") + precision_name(precision);  // dump file suffix
    const auto t_stack = std::chrono::steady_clock::now();
    auto enc = qwen3vl::gpu::GpuTextEncoder::create(tc, kLayers, 0, max_tokens, {}, precision);
    ASSERT_TRUE(enc.has_value()) << enc.status().to_string();
    ASSERT_TRUE((*enc)->init_random(seed).is_ok());
    std::unique_ptr<qwen3vl::gpu::GpuTextEncoder> enc2;  // the same first 2 layers (for the dump)
    if (dump) {
      auto made = qwen3vl::gpu::GpuTextEncoder::create(tc, 2, 0, max_tokens, {}, precision);
      ASSERT_TRUE(made.has_value()) << made.status().to_string();
      enc2 = std::move(made).value();
      ASSERT_TRUE(enc2->init_random(seed).is_ok());
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::fprintf(stderr, "[presentation-full] %s stack generated in %.2f s (weights %.1f GiB); GPU in use %.1f GiB\n",
                 precision_name(precision), seconds_since(t_stack),
                 static_cast<double>((*enc)->weight_bytes()) / (1 << 30), gpu_used_gib());

    for (size_t ci = 0; ci < names.size(); ++ci) {
      const std::string& name = names[ci];
      const std::optional<BuiltPresentation>& p = built[ci];
      const Tensor ids = p ? p->input_ids : text_only_ids(kTextOnlyTokens, tc.vocab_size);
      const Tensor pixels = p ? p->pixel_values.to(DType::kBF16) : Tensor();  // what diffusers hands the tower
      std::vector<double> total, vision_s;
      Tensor out, positions;
      qwen3vl::VisionEmbeddings vision;
      for (int64_t it = 0; it < warmup + iters; ++it) {
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const auto t0 = std::chrono::steady_clock::now();
        double tv = 0;
        Expected<Tensor> o = Tensor();
        if (p) {
          Expected<Tensor> pos = qwen3vl::rope_index(p->types, p->image_grids, p->video_grids);
          ASSERT_TRUE(pos.has_value()) << pos.status().to_string();
          positions = *pos;
          Expected<qwen3vl::VisionFeatures> f = (*tower)->run_on_device(pixels, p->grids());
          ASSERT_TRUE(f.has_value()) << f.status().to_string();
          tv = seconds_since(t0);
          vision = presentation_vision(*p, *f);
          o = (*enc)->encode(ids, positions, vision);
        } else {
          o = (*enc)->encode_text(ids);
        }
        ASSERT_TRUE(o.has_value()) << o.status().to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const double t = seconds_since(t0);
        std::fprintf(stderr, "[presentation-full] %s %s run %lld: %.4f s (vision %.4f s)%s\n", name.c_str(),
                     precision_name(precision), static_cast<long long>(it + 1), t, tv, it < warmup ? " warm-up" : "");
        if (it >= warmup) total.push_back(t), vision_s.push_back(tv);
        out = std::move(o).value();
      }
      EXPECT_TRUE(finite(out));

      nlohmann::json j{{"case", name},
                       {"precision", precision_name(precision)},
                       {"tokens", ids.numel()},
                       {"vision_patches", p ? p->pixel_values.dim(0) : 0},
                       {"vision_tokens", p ? static_cast<int64_t>(p->vision_rows.size()) : 0},
                       {"processor_s", p ? p->processor_s : 0.0},
                       {"layers", kLayers},
                       {"seed", seed},
                       {"total_s_median", median(total)},
                       {"total_s_all", total},
                       {"vision_s_median", median(vision_s)},
                       {"text_s_median", median(total) - median(vision_s)},
                       {"warmup", warmup},
                       {"text_weight_gib", static_cast<double>((*enc)->weight_bytes()) / (1 << 30)},
                       {"gpu_used_gib", gpu_used_gib()},
                       {"out_finite", finite(out)}};
      const std::map<std::string, std::string> meta{{"case", name},
                                                    {"seed", std::to_string(seed)},
                                                    {"layers", std::to_string(kLayers)},
                                                    {"dtype", "bf16"},
                                                    {"precision", precision_name(precision)},
                                                    {"text_config", text_config_json(tc)},
                                                    {"vision_config", vision_config_json(vc)},
                                                    {"weights", "qwen3vl::random_weights.h rules, filled on the GPU"}};
      if (!dump) {
        std::ofstream(dir + "/" + name + tag + ".json") << j.dump() << "\n";
        std::printf("[presentation-full] %s\n", j.dump().c_str());
        std::fflush(stdout);
        continue;
      }
      // hidden_states[2]: the 2-layer stack on the last run's vision outputs (still on the GPU).
      Expected<Tensor> h2 = p ? enc2->encode(ids, positions, vision) : enc2->encode_text(ids);
      ASSERT_TRUE(h2.has_value()) << h2.status().to_string();
      const auto t_dump = std::chrono::steady_clock::now();
      std::vector<std::pair<std::string, Tensor>> outputs = {{"hidden_2", *h2}, {"hidden_final", out}};
      if (bf16) {
        // The tower's outputs too (bf16, as the stack takes them) where they are small (ref2va-2img):
        // the script feeds them to transformers' stack to tell the tower's share of the distance.
        if (p && p->vision_rows.size() <= 10000) {
          Expected<Tensor> f = cuda::download(vision.features);
          ASSERT_TRUE(f.has_value()) << f.status().to_string();
          outputs.emplace_back("vision_features", *f);
          for (size_t k = 0; k < vision.deepstack.size(); ++k) {
            Expected<Tensor> d = cuda::download(vision.deepstack[k]);
            ASSERT_TRUE(d.has_value()) << d.status().to_string();
            outputs.emplace_back("deepstack_" + std::to_string(k), *d);
          }
        }
        ASSERT_TRUE(write_presentation_dump(dir + "/" + name + ".safetensors", p ? &*p : nullptr, ids, outputs, meta)
                        .is_ok());
      } else {  // the outputs alone: <case>.safetensors holds the inputs
        ASSERT_TRUE(weights::write_safetensors(dir + "/" + name + tag + ".safetensors", outputs, meta).is_ok());
      }
      std::ofstream(dir + "/" + name + tag + ".json") << j.dump() << "\n";
      std::fprintf(stderr, "[presentation-full] %s%s dumped in %.2f s\n", name.c_str(), tag.c_str(),
                   seconds_since(t_dump));
      std::printf("[presentation-full] %s\n", j.dump().c_str());
      std::fflush(stdout);
    }
  }
}

}  // namespace
}  // namespace orochi::testing
