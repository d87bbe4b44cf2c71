// Pulls a model's parameters by name out of a source (a checkpoint, a generator), remembering the
// first failure so assembling code can take every tensor in a row and check once at the end.
// `Spec` is a model's parameter description with a `name` member (h3::ParamSpec, ...).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/status.h"
#include "core/tensor.h"

namespace orochi::weights {

template <typename Spec>
class ParameterCollector {
 public:
  using Source = std::function<Expected<Tensor>(const Spec&)>;

  ParameterCollector(const Source& source, std::vector<Spec> specs) : source_(source) {
    for (Spec& spec : specs) specs_.emplace(spec.name, std::move(spec));
  }

  // The named parameter, or an undefined tensor once anything has failed. Asking for a name the
  // model's spec list lacks is a bug in the model code.
  Tensor take(const std::string& name) {
    if (!status_.is_ok()) return {};
    auto it = specs_.find(name);
    OROCHI_CHECK(it != specs_.end(), "no parameter spec named ", name);
    Expected<Tensor> t = source_(it->second);
    if (!t) {
      status_ = t.status();
      return {};
    }
    return std::move(t).value();
  }
  bool ok() const { return status_.is_ok(); }
  const Status& status() const { return status_; }

 private:
  const Source& source_;
  std::map<std::string, Spec> specs_;
  Status status_;
};

}  // namespace orochi::weights
