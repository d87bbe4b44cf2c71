// core/torch_cpu_normal.h against torch's own CPU draws (tests/data/h3_video_vae_encoder, made by
// scripts/golden/make_h3_video_vae_encoder.py on an AVX2 torch build): torch.randn under a fresh
// Generator().manual_seed(42) for the latent shapes the pipeline samples, compared bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/torch_cpu_normal.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

std::string golden_path() { return testing::test_data_dir() + "/h3_video_vae_encoder/golden.safetensors"; }

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

TEST(TorchCpuNormal, MersenneTwisterIsTheStandardOne) {
  // torch's at::mt19937 is std::mt19937 (same seeding, same tempering); only the low 32 seed bits count.
  for (uint64_t seed : {uint64_t{0}, uint64_t{42}, uint64_t{5489}, (uint64_t{7} << 32) | 42}) {
    TorchMt19937 ours(seed);
    std::mt19937 std_mt(static_cast<uint32_t>(seed));
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(ours.next(), std_mt()) << "seed " << seed << " draw " << i;
  }
}

// Every "<prefix><shape>.shape" case of the golden against our draw with `kernel`, bit for bit.
int expect_draws_match(const weights::Checkpoint& g, const std::string& prefix, TorchCpuKernel kernel) {
  int cases = 0;
  for (const std::string& name : g.names()) {
    const std::string suffix = ".shape";
    if (name.rfind(prefix, 0) != 0 || name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string base = name.substr(0, name.size() - suffix.size());
    SCOPED_TRACE(base);
    Tensor shape_t = g.get(name).value(), index = g.get(base + ".index").value();
    Tensor values = g.get(base + ".values").value().to(DType::kF32);
    Shape shape(shape_t.data<int64_t>(), shape_t.data<int64_t>() + shape_t.numel());
    Tensor ours = torch_cpu_randn(shape, 42, kernel);
    EXPECT_EQ(ours.shape(), shape);
    int64_t mismatches = 0;
    for (int64_t k = 0; k < index.numel(); ++k) {
      const int64_t i = index.data<int64_t>()[k];
      if (i >= ours.numel()) {
        ADD_FAILURE() << "index " << i << " outside " << ours.numel();
        break;
      }
      if (bits(ours.data<float>()[i]) != bits(values.data<float>()[k]) && mismatches++ < 5)
        ADD_FAILURE() << "element " << i << ": ours " << ours.data<float>()[i] << ", torch " << values.data<float>()[k];
    }
    EXPECT_EQ(mismatches, 0) << "of " << index.numel() << " checked values of " << ours.numel();
    ++cases;
  }
  return cases;
}

TEST(TorchCpuNormal, Seed42DrawsAreBitIdenticalToTorch) {
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(golden_path());
  ASSERT_TRUE(g.has_value()) << g.status().to_string();
  // torch with its AVX2 kernels (normal_fill_AVX2, avx_mathfun), the goldens' machine.
  EXPECT_GE(expect_draws_match(*g, "noise.", TorchCpuKernel::kAvx2), 11) << "the golden lost its noise cases";
  // torch with ATEN_CPU_CAPABILITY=default (normal_fill with libm), what AVX-512 hosts run too.
  EXPECT_GE(expect_draws_match(*g, "noise_scalar.", TorchCpuKernel::kScalar), 11);
}

TEST(TorchCpuNormal, TheTwoKernelsDifferInLastBitsOnly) {
  Tensor a = torch_cpu_randn({4096}, 42, TorchCpuKernel::kAvx2), b = torch_cpu_randn({4096}, 42, TorchCpuKernel::kScalar);
  int64_t differ = 0;
  for (int64_t i = 0; i < 4096; ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    differ += bits(x) != bits(y);
    EXPECT_NEAR(x, y, 4e-6f * (1.0f + std::abs(x))) << i;
  }
  EXPECT_GT(differ, 0);
}

TEST(TorchCpuNormal, RaggedTailRedrawsTheLastSixteen) {
  // n = 17: the first 16 are one block; the tail block is 16 fresh uniforms written over [1, 17).
  Tensor a = torch_cpu_randn({17}, 42), b = torch_cpu_randn({16}, 42);
  EXPECT_EQ(bits(a.data<float>()[0]), bits(b.data<float>()[0]));
  EXPECT_NE(bits(a.data<float>()[1]), bits(b.data<float>()[1]));
  // Same seed, same shape: same draw; another seed: another draw.
  Tensor c = torch_cpu_randn({3, 7}, 42), d = torch_cpu_randn({3, 7}, 42), e = torch_cpu_randn({3, 7}, 43);
  EXPECT_EQ(std::memcmp(c.data<float>(), d.data<float>(), c.nbytes()), 0);
  EXPECT_NE(std::memcmp(c.data<float>(), e.data<float>(), c.nbytes()), 0);
}

}  // namespace
}  // namespace orochi
