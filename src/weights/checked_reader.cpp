#include "weights/checked_reader.h"

#include <utility>

namespace orochi::weights {

CheckedReader::CheckedReader(const Checkpoint& ckpt, std::string prefix, std::string config_hint,
                             std::string component, std::vector<std::string>& loaded)
    : ckpt_(ckpt), prefix_(std::move(prefix)), config_hint_(std::move(config_hint)), component_(std::move(component)),
      loaded_(loaded) {}

Tensor CheckedReader::take(const std::string& name, const Shape& shape) {
  if (!status_.is_ok()) return {};
  const std::string key = prefix_ + name;
  Expected<Tensor> t = ckpt_.get(key);
  if (!t) {
    status_ = t.status();
    return {};
  }
  if (t->shape() != shape) {
    status_ = shape_mismatch(key + " has shape " + shape_to_string(t->shape()) + ", expected " +
                             shape_to_string(shape) + " for " + config_hint_ + ": wrong model or config?");
    return {};
  }
  const DType d = t->dtype();
  if (d != DType::kF32 && d != DType::kBF16 && d != DType::kF16) {
    status_ = shape_mismatch(key + " is " + dtype_name(d) + "; " + component_ +
                             " reads f32, bf16 or f16 weights (quantized checkpoints are not supported)");
    return {};
  }
  loaded_.push_back(key);
  return std::move(t).value();
}

}  // namespace orochi::weights
