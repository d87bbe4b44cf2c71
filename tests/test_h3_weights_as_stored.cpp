// load_weights(folder, as_stored): a GPU run keeps the denoiser's weights in the checkpoint's dtype
// (bf16 in the release) instead of converting 33 B parameters to f32 on the host. On bf16 copies
// of the tiny checkpoint (diffusers names, and the original release's fused q/k/v and swapped
// fc1 halves), every parameter read as stored is bf16 and equals the f32 read value for value.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "models/h3/checkpoint_layout.h"
#include "models/h3/parameters.h"
#include "models/h3/weights.h"
#include "support/checkpoint_copy.h"
#include "support/golden.h"
#include "support/temp_dir.h"
#include "weights/model_folder.h"

namespace orochi {
namespace {

void expect_as_stored_equals_f32(const std::string& source) {
  testing::TempDir dir("h3_bf16");
  testing::write_converted_copy(source, dir.path, DType::kBF16);
  if (::testing::Test::HasFatalFailure()) return;
  Expected<weights::ModelFolder> model = weights::ModelFolder::open(dir.path.string());
  ASSERT_TRUE(model.has_value()) << model.status().to_string();
  Expected<h3::H3Config> config = h3::H3Config::from_json(model->config);
  ASSERT_TRUE(config.has_value());
  Expected<h3::KeyLayout> layout = h3::detect_key_layout(model->weights);
  ASSERT_TRUE(layout.has_value());
  int checked = 0;
  for (const h3::ParamSpec& spec : h3::h3_parameters(*config)) {
    Expected<Tensor> stored = h3::read_parameter(model->weights, *layout, spec, *config, /*as_stored=*/true);
    Expected<Tensor> f32 = h3::read_parameter(model->weights, *layout, spec, *config);
    ASSERT_TRUE(stored.has_value() && f32.has_value()) << spec.name;
    EXPECT_EQ(stored->dtype(), DType::kBF16) << spec.name;
    EXPECT_EQ(f32->dtype(), DType::kF32) << spec.name;
    ASSERT_EQ(stored->shape(), spec.shape) << spec.name;
    const Tensor widened = stored->to(DType::kF32);
    ASSERT_EQ(std::memcmp(widened.raw_data(), f32->contiguous().raw_data(), f32->nbytes()), 0) << spec.name;
    ++checked;
  }
  EXPECT_GT(checked, 20);
  Expected<h3::H3Weights> loaded = h3::load_weights(dir.path.string(), /*as_stored=*/true);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  EXPECT_EQ(loaded->blocks.at(0).attn.to_q.weight.dtype(), DType::kBF16);
  EXPECT_EQ(loaded->blocks.at(0).ff_in.weight.dtype(), DType::kBF16);
}

TEST(H3WeightsAsStored, DiffusersNamesKeepTheirDtype) { expect_as_stored_equals_f32(testing::h3_tiny_dir() + "/transformer"); }

TEST(H3WeightsAsStored, OriginalNamesUnfuseAndSwapInTheirDtype) {
  expect_as_stored_equals_f32(testing::h3_tiny_dir() + "/transformer_original");
}

}  // namespace
}  // namespace orochi
