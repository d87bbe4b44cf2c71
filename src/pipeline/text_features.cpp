#include "pipeline/text_features.h"

#include <cmath>

#include "core/random.h"
#include "weights/safetensors.h"

namespace orochi::pipeline {
namespace {
constexpr uint64_t kDemoTextStream = 13;
}

Expected<Tensor> load_text_features(const std::string& path, int64_t text_dim) {
  OROCHI_ASSIGN_OR_RETURN(auto file, weights::SafetensorsFile::open(path));
  const weights::TensorInfo* info = file->find("prompt_embeds");
  if (!info) {
    if (file->tensors().size() != 1)
      return invalid_argument(path + " holds " + std::to_string(file->tensors().size()) +
                              " tensors and none is named prompt_embeds; save the text features as one tensor "
                              "[L, " + std::to_string(text_dim) + "] or name it prompt_embeds");
    info = &file->tensors().front();
  }
  Tensor t = file->tensor(*info);
  if (t.ndim() == 3 && t.dim(0) == 1) t = t.view({t.dim(1), t.dim(2)});
  if (!dtype_is_float(t.dtype()) || t.ndim() != 2 || t.dim(1) != text_dim || t.dim(0) == 0)
    return shape_mismatch(path + ": text features '" + info->name + "' must be a float tensor [L, " +
                          std::to_string(text_dim) + "] or [1, L, " + std::to_string(text_dim) +
                          "] (the conditioner's hidden size), got " + t.describe());
  Tensor f = t.to(DType::kF32);
  const float* p = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i)
    if (!std::isfinite(p[i]))
      return invalid_argument(path + ": text features '" + info->name + "' hold a non-finite value at element " +
                              std::to_string(i));
  return f;
}

Tensor random_text_features(int64_t rows, int64_t text_dim, uint64_t seed) {
  return normal_tensor({rows, text_dim}, seed, kDemoTextStream);
}

}  // namespace orochi::pipeline
