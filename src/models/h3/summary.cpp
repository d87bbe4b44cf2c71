#include "models/h3/summary.h"

#include "weights/scaled_fp8.h"

namespace orochi::h3 {
namespace {

void add(ParamSummary& s, ParamGroup group, DType dtype, int64_t numel) {
  const uint64_t bytes = static_cast<uint64_t>(numel) * dtype_size(dtype);
  for (GroupStats* g : {&s.groups[group], &s.total}) {
    g->params += numel;
    g->bytes += bytes;
    g->params_by_dtype[dtype] += numel;
  }
}

}  // namespace

ParamSummary summarize_checkpoint(const weights::Checkpoint& ckpt, const std::string& prefix) {
  ParamSummary s;
  for (const std::string& name : ckpt.names()) {
    const weights::TensorInfo* info = ckpt.info(name);
    const std::string key = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
    add(s, param_group_of(key), info->dtype, shape_numel(info->shape));
  }
  return s;
}

ParamSummary summarize_config(const H3Config& config, DType dtype) {
  ParamSummary s;
  for (const ParamSpec& spec : h3_parameters(config)) add(s, param_group_of(spec.name), dtype, shape_numel(spec.shape));
  return s;
}

HostBytes host_bytes_as_loaded(const weights::Checkpoint& ckpt) {
  HostBytes b;
  for (const std::string& name : ckpt.names()) {
    const weights::TensorInfo* info = ckpt.info(name);
    const auto elements = static_cast<uint64_t>(shape_numel(info->shape));
    if (weights::is_fp8(info->dtype)) b.copies += elements * dtype_size(DType::kBF16);
    else b.mapped += elements * dtype_size(info->dtype);
  }
  return b;
}

}  // namespace orochi::h3
