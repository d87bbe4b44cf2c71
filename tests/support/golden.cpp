#include "support/golden.h"

#include <gtest/gtest.h>

#include "support/paths.h"

namespace orochi::testing {

std::string h3_tiny_dir() { return test_data_dir() + "/h3_tiny"; }

Tensor golden_tensor(const weights::Checkpoint& golden, const std::string& name) {
  Expected<Tensor> t = golden.get(name);
  OROCHI_CHECK(t.has_value(), t.status().to_string());
  Tensor v = t->dtype() == DType::kI64 ? t->clone() : t->to(DType::kF32);
  if (v.ndim() >= 2 && v.dim(0) == 1) {
    Shape s(v.shape().begin() + 1, v.shape().end());
    v = v.view(s);
  }
  return v;
}

h3::H3Inputs golden_inputs(const weights::Checkpoint& g) {
  h3::H3Inputs in;
  in.video = golden_tensor(g, "in.video");
  in.audio = golden_tensor(g, "in.audio");
  in.text = golden_tensor(g, "in.text");
  in.timestep_indices = golden_tensor(g, "in.timestep_indices");
  in.token_tags = golden_tensor(g, "in.token_tags");
  in.positions = golden_tensor(g, "in.position_ids");
  in.video_indices = golden_tensor(g, "in.video_indices");
  in.audio_indices = golden_tensor(g, "in.audio_indices");
  in.text_indices = golden_tensor(g, "in.text_indices");
  return in;
}

}  // namespace orochi::testing
