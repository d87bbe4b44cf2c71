// --text-features files: the layouts diffusers' prompt_embeds come in are read, and everything else
// is refused with the file, the tensor and the expected shape named.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/random.h"
#include "pipeline/text_features.h"
#include "support/compare.h"
#include "support/temp_dir.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

std::string write(const testing::TempDir& dir, const std::string& name,
                  const std::vector<std::pair<std::string, Tensor>>& tensors) {
  const std::string path = dir.file(name);
  EXPECT_TRUE(weights::write_safetensors(path, tensors).is_ok());
  return path;
}

TEST(TextFeatures, ReadsPromptEmbedsInAnyFloatDtypeWithOrWithoutBatch) {
  testing::TempDir dir("features");
  const Tensor f = normal_tensor({1, 6, 8}, 5, 1);  // [1, L, D]
  Expected<Tensor> a = pipeline::load_text_features(write(dir, "a.safetensors", {{"prompt_embeds", f}}), 8);
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  EXPECT_EQ(a->shape(), (Shape{6, 8}));
  EXPECT_TENSOR_CLOSE(*a, f.view({6, 8}), 0.0);
  // bf16, unbatched, beside another tensor: found by name and widened to f32.
  Expected<Tensor> b = pipeline::load_text_features(
      write(dir, "b.safetensors", {{"mask", Tensor::zeros({6}, DType::kI64)}, {"prompt_embeds", f.to(DType::kBF16)}}),
      8);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  EXPECT_EQ(b->dtype(), DType::kF32);
  EXPECT_TENSOR_CLOSE(*b, f.view({6, 8}), 4e-3);
}

TEST(TextFeatures, RefusesWhatIsNotAFeatureTensor) {
  testing::TempDir dir("features_bad");
  const Tensor f = normal_tensor({6, 8}, 5, 1);
  Expected<Tensor> r = pipeline::load_text_features(write(dir, "w.safetensors", {{"x", f}}), 16);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(r.status().message().find("[L, 16]"), std::string::npos) << r.status().to_string();

  r = pipeline::load_text_features(write(dir, "two.safetensors", {{"x", f}, {"y", f}}), 8);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("prompt_embeds"), std::string::npos) << r.status().to_string();

  r = pipeline::load_text_features(write(dir, "batch.safetensors", {{"prompt_embeds", normal_tensor({2, 6, 8}, 1, 1)}}), 8);
  EXPECT_FALSE(r.has_value());

  Tensor nan = f.clone();
  nan.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  r = pipeline::load_text_features(write(dir, "nan.safetensors", {{"prompt_embeds", nan}}), 8);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("non-finite"), std::string::npos);

  r = pipeline::load_text_features(dir.file("missing.safetensors"), 8);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace orochi
