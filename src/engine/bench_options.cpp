// The benchmarks' option checks, in one place: the CLI runs them before it asks for a GPU, and the
// GPU backend again before it builds anything.
#include "engine/gpu_backend.h"
#include "models/qwen3vl/text_config.h"

namespace orochi::engine {

Status check_bench_text_options(const BenchTextOptions& o) {
  const int64_t layers = qwen3vl::TextConfig::qwen3vl_32b().num_hidden_layers;
  if (o.layers < 1 || o.layers > layers)
    return usage_error("--layers must be an integer in [1, " + std::to_string(layers) + "], got " + std::to_string(o.layers));
  if (o.stream_layers < 0 || o.stream_layers > o.layers)
    return invalid_argument("--stream-layers must be in 0..--layers (" + std::to_string(o.layers) + "), got " +
                            std::to_string(o.stream_layers));
  if (!o.write_checkpoint.empty() && (o.stream_layers > 0 || !o.checkpoint.empty()))
    return invalid_argument("--write-checkpoint writes the random weights with every layer resident: drop "
                            "--stream-layers and --checkpoint");
  return Status::ok();
}

}  // namespace orochi::engine
