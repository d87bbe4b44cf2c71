// Reading a model's tensors out of a checkpoint one by one, each checked against the shape its
// config implies and for a float dtype. The first failure is kept and later reads are skipped, so a
// loader reads every tensor in sequence and returns one error at the end (status()). The keys read
// are recorded, for the loader's unknown-key check.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "weights/checkpoint.h"

namespace orochi::weights {

class CheckedReader {
 public:
  // `prefix` goes before every name; `config_hint` ends a shape error ("this config.json's
  // vision_config"); `component` starts a dtype error ("the vision tower").
  CheckedReader(const Checkpoint& ckpt, std::string prefix, std::string config_hint, std::string component,
                std::vector<std::string>& loaded);

  // A view of `<prefix>name` of `shape` in f32, bf16 or f16, or an undefined tensor after a failure.
  Tensor take(const std::string& name, const Shape& shape);
  const Status& status() const { return status_; }

 private:
  const Checkpoint& ckpt_;
  std::string prefix_, config_hint_, component_;
  std::vector<std::string>& loaded_;
  Status status_;
};

}  // namespace orochi::weights
