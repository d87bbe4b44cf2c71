// The generic path (what an A100, RTX 3090 / A6000 or 4090 runs: cuDNN attention, cuBLASLt GEMMs,
// no sm_90a kernel; engine/gpu_capability.h) forced on the H200 with --set kernels=generic, against
// the Hopper path (Orochi's sm_90a flash attention; with gemm=sm90a also its wgmma GEMM), so the code
// those GPUs run is tested here.
//
// Numerics on the narrow model (tests/cuda/h3_narrow_model.h: 8 heads of 128, the flash kernel's
// shape), 3 blocks, bf16 and int8: the two paths compute the same attention and linears in bf16 with
// f32 accumulation and differ by accumulation order and where P is rounded to bf16 (~2^-9 relative
// per element, averaged over the keys): rel L2 ~1e-3 at the output, where bf16's whole distance to
// f32 is <= 2e-2 (test_h3_gpu_precision). Bound 1e-2 between the paths; each path must also differ
// from the other (>= 1e-6: a run that did not switch kernels would be bit-identical), and the
// runner's attention kernel must read "cudnn" on the generic path and "flash-sm90a" on Hopper's.
// End to end, `bench dit` (released shapes, 1 layer, 480p) reports attention "cudnn" under
// kernels=generic, and refuses kernels=generic with attention=flash before any GPU work.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "backends/cuda/device.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/gpu_capability.h"
#include "h3_narrow_model.h"
#include "models/h3/cuda/gpu_runner.h"
#include "models/h3/lora.h"
#include "support/compare.h"

namespace orochi {
namespace {

using engine::RunSwitches;

using testing::scaled_host_weights;

struct PathRun {
  h3::H3Outputs out;
  std::string attention;
};

// The switches `list` as GPU 0 takes them, then a 3-block forward on the narrow model.
PathRun run_path(const char* list, Precision precision) {
  PathRun run;
  RunSwitches given;
  EXPECT_TRUE(engine::set_run_switches(given, list).is_ok()) << list;
  Expected<RunSwitches> switches = engine::gpu_switches(given, precision, 0, 1);
  EXPECT_TRUE(switches.has_value()) << list << ": " << switches.status().to_string();
  if (!switches) return run;
  const h3::H3Config c = testing::quantizable_narrow_config();
  const testing::Request r = testing::narrow_request(c);
  h3::gpu::RunnerOptions options{switches->kernels, switches->sp, precision};
  auto runner = h3::gpu::H3GpuRunner::create(c, 0, r.size, {}, {}, options);
  EXPECT_TRUE(runner.has_value()) << runner.status().to_string();
  if (!runner) return run;
  const h3::H3Weights weights = scaled_host_weights(c);  // read again by every request's AdaLN tables
  EXPECT_TRUE((*runner)->upload_weights(weights).is_ok());
  EXPECT_TRUE((*runner)->set_request(r.timesteps, r.in).is_ok());
  Status s = (*runner)->forward();
  EXPECT_TRUE(s.is_ok()) << list << ": " << s.to_string();
  Expected<h3::H3Outputs> out = (*runner)->outputs();
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  if (out) run.out = std::move(out).value();
  run.attention = (*runner)->attention_kernel();
  return run;
}

bool hopper_gpu() {
  Expected<std::vector<cuda::DeviceInfo>> d = cuda::list_devices();
  return d && !d->empty() && engine::runs_sm90a({(*d)[0].sm_major, (*d)[0].sm_minor});
}

TEST(GenericPathGpu, MatchesTheHopperPathOnTheNarrowModel) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  if (!hopper_gpu()) GTEST_SKIP() << "GPU 0 is not compute capability 9.0: it runs only the generic path";
  for (const Precision p : {Precision::kBf16, Precision::kInt8}) {
    const PathRun generic = run_path("kernels=generic", p);
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(generic.attention, "cudnn");
    for (const char* hopper : {"kernels=auto", "gemm=sm90a"}) {
      if (p != Precision::kBf16 && std::strcmp(hopper, "gemm=sm90a") == 0) continue;  // bf16 weights only
      const PathRun h = run_path(hopper, p);
      ASSERT_FALSE(HasFailure());
      EXPECT_EQ(h.attention, "flash-sm90a") << hopper;
      const testing::Comparison v = testing::compare(generic.out.video, h.out.video);
      const testing::Comparison a = testing::compare(generic.out.audio, h.out.audio);
      std::printf("GENERIC_PATH %s generic vs %-13s video rel_l2=%.3e cos=%.6f | audio rel_l2=%.3e cos=%.6f\n",
                  precision_name(p), hopper, v.rel_l2, v.cosine, a.rel_l2, a.cosine);
      EXPECT_TRUE(v.same_nonfinite && a.same_nonfinite) << hopper;
      EXPECT_LE(std::max(v.rel_l2, a.rel_l2), 1e-2) << precision_name(p) << " " << hopper;
      EXPECT_GE(v.rel_l2, 1e-6) << precision_name(p) << " " << hopper << ": identical outputs, the path did not change";
    }
  }
}

TEST(GenericPathGpu, BenchDitReportsCudnnAttentionAndRefusesFlashWithGeneric) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  engine::BenchDitOptions o;
  o.layers = 1;
  o.warmup = 0;
  o.iters = 1;
  ASSERT_TRUE(engine::set_run_switches(o.switches, "kernels=generic").is_ok());
  Expected<nlohmann::json> report = engine::cuda_backend::cuda_bench_dit(o);
  ASSERT_TRUE(report.has_value()) << report.status().to_string();
  EXPECT_EQ((*report)["attention"], "cudnn") << report->dump();
  EXPECT_EQ((*report)["switches"]["attention"], "cudnn") << report->dump();
  EXPECT_EQ((*report)["switches"]["kernels"], "generic") << report->dump();

  ASSERT_TRUE(engine::set_run_switches(o.switches, "attention=flash").is_ok());
  Expected<nlohmann::json> refused = engine::cuda_backend::cuda_bench_dit(o);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("--set attention=flash"), std::string::npos) << refused.status().to_string();
}

}  // namespace
}  // namespace orochi
