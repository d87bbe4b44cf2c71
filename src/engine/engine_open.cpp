// Engine::open: the options and devices checked, the host weights read once (a model folder, a
// transformer folder or file, the demo, or nothing for random weights), LoRAs merged.
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/stopwatch.h"
#include "core/format.h"
#include "core/host_memory.h"
#include "models/h3/lora.h"
#include "models/h3/summary.h"
#include "models/h3/weights.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/weights.h"
#include "planner/parallel_choice.h"
#include "weights/model_folder.h"

namespace orochi::engine {
namespace {


// "cpu", "cuda", "cuda:N" -> "cpu" / "cuda:N"; the index in `index`.
Expected<std::string> normalized_device(const std::string& device, int* index) {
  *index = 0;
  if (device == "cpu") return device;
  const std::string d = device == "cuda" ? "cuda:0" : device;
  const bool valid = d.rfind("cuda:", 0) == 0 && d.size() > 5 && d.size() <= 8 &&
                     d.find_first_not_of("0123456789", 5) == std::string::npos;
  if (!valid) return usage_error("--device must be cpu, cuda or cuda:N, got '" + device + "'");
  *index = std::stoi(d.substr(5));
  return d;
}

// The GPUs a run asks for must be visible before any model is built.
Status check_gpus_visible(int first, int count) {
  GpuBackend& gpus = gpu_backend();
  if (gpus.name() == "none")
    return unsupported("this build has no CUDA backend, so there is no GPU to run on; use --device cpu, or build on a "
                       "machine with the CUDA toolkit (scripts/build.sh enables it when nvcc is found)");
  const int visible = gpus.device_count();
  if (visible == 0) return unsupported("no CUDA GPU visible; use --device cpu");
  if (first + count > visible)
    return invalid_argument(std::string(count > 1 ? "--gpus " + std::to_string(count) + " from " : "") + "cuda:" +
                            std::to_string(first) + " needs GPU" + (count > 1 ? "s " : " ") + std::to_string(first) +
                            (count > 1 ? ".." + std::to_string(first + count - 1) : "") + ", but " +
                            std::to_string(visible) + " GPU" + (visible == 1 ? " is" : "s are") +
                            " visible (cuda:0" + (visible > 1 ? "..cuda:" + std::to_string(visible - 1) : "") +
                            "); use fewer --gpus or another --device");
  return Status::ok();
}

}  // namespace

void Engine::note(const std::string& line) const {
  if (options_.on_note) options_.on_note(line);
}

// The CPU path holds every transformer weight in f32: a model that cannot fit is refused before
// any weight is read.
static Status check_config_fits_ram(const h3::H3Config& config) {
  const uint64_t need = static_cast<uint64_t>(h3::summarize_config(config, DType::kF32).total.bytes);
  const uint64_t have = available_ram_bytes();
  if (have != 0 && need > have * 9 / 10)
    return invalid_argument("the CPU path holds the transformer in f32: " + format_bytes(need) + " needed, " +
                            format_bytes(have) + " of RAM available. The real MiniMax-H3 needs a GPU.");
  return Status::ok();
}

static Status check_transformer_fits_ram(const std::string& transformer_dir) {
  OROCHI_ASSIGN_OR_RETURN(const nlohmann::json json, weights::read_model_config(transformer_dir));
  OROCHI_ASSIGN_OR_RETURN(const h3::H3Config config, h3::H3Config::from_json(json));
  return check_config_fits_ram(config);
}

// --transformer FILE: the single-file transformer with `dir`'s VAEs, or the demo's VAEs without a
// folder (whose channels must then be the demo's).
static Expected<pipeline::T2vaModels> load_with_transformer_file(const ModelSource& source, bool on_gpu,
                                                                 std::string* described) {
  const std::string& file = *source.transformer_file;
  OROCHI_ASSIGN_OR_RETURN(const auto config, h3::transformer_file_config(file, source.transformer_config));
  if (!on_gpu) OROCHI_RETURN_IF_ERROR(check_config_fits_ram(config.first));
  OROCHI_ASSIGN_OR_RETURN(const std::optional<h3::QkvOrder> order, h3::parse_qkv_order(source.qkv_order));
  pipeline::T2vaModels m;
  if (source.dir) {
    namespace fs = std::filesystem;
    m.name = *source.dir + " with the transformer " + file;
    OROCHI_ASSIGN_OR_RETURN(m.video_vae, h3vae::load_decoder_weights((fs::path(*source.dir) / "vae").string()));
    OROCHI_ASSIGN_OR_RETURN(m.audio_vae, h3_audio::load_decoder((fs::path(*source.dir) / "audio_vae").string()));
  } else {
    m = pipeline::demo_t2va_models(kDemoWeightSeed);
    const h3::H3Config demo = m.transformer.config;
    if (config.first.in_channels != demo.in_channels || config.first.audio_in_channels != demo.audio_in_channels)
      return invalid_argument("--transformer " + file + " (config from " + config.second + ") denoises " +
                              std::to_string(config.first.in_channels) + " video / " +
                              std::to_string(config.first.audio_in_channels) +
                              " audio latent channels; without MODEL_DIR it runs with the demo model's VAEs, which "
                              "decode " + std::to_string(demo.in_channels) + " / " +
                              std::to_string(demo.audio_in_channels) + ": pass MODEL_DIR for its VAEs");
    m.name = file + " with the demo model's VAEs (random weights)";
  }
  h3::TransformerFileOptions o;
  o.config_path = source.transformer_config;
  o.qkv_order = order;
  o.as_stored = on_gpu;
  OROCHI_ASSIGN_OR_RETURN(h3::TransformerFile loaded, h3::load_transformer_file(file, o));
  m.transformer = std::move(loaded.weights);
  OROCHI_RETURN_IF_ERROR(pipeline::check_t2va_models(m));
  *described = file + ": " + loaded.layout + "; config from " + loaded.config_from;
  return m;
}

Expected<std::unique_ptr<Engine>> Engine::open(const ModelSource& source, const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  e->source_ = source;
  e->options_ = options;
  if (source.dir && source.random_weights)
    return invalid_argument("--random-weights replaces MODEL_DIR's weights; pass one or the other");
  if (source.transformer_dir && (source.dir || source.random_weights || source.transformer_file))
    return invalid_argument("a transformer folder alone is a source of its own (for a forward): not with a model "
                            "folder, --transformer or --random-weights");
  if (source.transformer_file && source.random_weights)
    return invalid_argument("--transformer FILE gives the transformer's weights, --random-weights makes them: pass "
                            "one or the other");
  if ((source.transformer_config || source.qkv_order != "auto") && !source.transformer_file)
    return usage_error("--transformer-config and --qkv-order describe a --transformer FILE");
  // Where it runs: a checkpoint or random weights default to the first GPU when there is one.
  std::string device = options.device;
  if (device.empty())
    device = (source.dir || source.random_weights) && gpu_backend().device_count() > 0 ? "cuda:0" : "cpu";
  OROCHI_ASSIGN_OR_RETURN(e->device_, normalized_device(device, &e->first_gpu_));
  e->on_gpu_ = e->device_ != "cpu";
  if (options.gpus < 1 || options.gpus > 64)
    return usage_error("--gpus must be in [1, 64], got " + std::to_string(options.gpus));
  if (options.gpus > 1 && !e->on_gpu_)
    return invalid_argument("--gpus " + std::to_string(options.gpus) + " needs --device cuda");
  if (options.comm_timeout_s < 1) return usage_error("--comm-timeout must be >= 1 second");
  if (Status s = planner::parse_parallel_choice(options.parallel).status(); !s.is_ok()) return usage_error(s.message());
  if (source.random_weights && !e->on_gpu_)
    return invalid_argument("--random-weights makes the full-size model, which needs a GPU: add --device cuda");
  if (e->on_gpu_) OROCHI_RETURN_IF_ERROR(check_gpus_visible(e->first_gpu_, options.gpus));

  // The host weights, read once for every request of this engine.
  const auto t_load = Clock::now();
  e->family_ = model_families().front();  // the demo and random weights are MiniMax-H3's
  if (source.transformer_file) {
    if (source.dir) {
      OROCHI_ASSIGN_OR_RETURN(e->family_, detect_family(*source.dir));
    }
    std::string described;
    OROCHI_ASSIGN_OR_RETURN(e->models_, load_with_transformer_file(source, e->on_gpu_, &described));
    e->transformer_config_ = e->models_.transformer.config;
    e->note("transformer " + described);
    if (source.dir && e->on_gpu_ && std::filesystem::exists(*source.dir + "/text_encoder/config.json")) {
      OROCHI_ASSIGN_OR_RETURN(e->configs_, planner::load_model_configs(*source.dir));
      e->configs_->transformer = e->transformer_config_;
    }
  } else if (source.dir) {
    const std::string& dir = *source.dir;
    OROCHI_ASSIGN_OR_RETURN(e->family_, detect_family(dir));
    if (!e->on_gpu_) OROCHI_RETURN_IF_ERROR(check_transformer_fits_ram(dir + "/transformer"));
    // A GPU run keeps the denoiser's weights as stored (bf16 views of the files): its upload converts.
    OROCHI_ASSIGN_OR_RETURN(e->models_, pipeline::load_t2va_models(dir, e->on_gpu_));
    e->transformer_config_ = e->models_.transformer.config;
    // A GPU run is planned from the four configs; a folder without text_encoder/ has no full set
    // and runs unplanned unless a prompt needs it (plan() says so).
    if (e->on_gpu_ && std::filesystem::exists(dir + "/text_encoder/config.json")) {
      OROCHI_ASSIGN_OR_RETURN(e->configs_, planner::load_model_configs(dir));
    }
  } else if (source.transformer_dir) {
    const std::string& dir = *source.transformer_dir;
    if (e->on_gpu_)
      return invalid_argument("a transformer folder alone runs the CPU forward; on a GPU, `orochi bench dit` times "
                              "the forward");
    OROCHI_RETURN_IF_ERROR(check_transformer_fits_ram(dir));
    OROCHI_ASSIGN_OR_RETURN(e->models_.transformer, h3::load_weights(dir));
    e->models_.name = dir;
    e->transformer_config_ = e->models_.transformer.config;
  } else if (source.random_weights) {
    e->models_.name = "MiniMax-H3 released shapes with random weights (generated on the GPU, not a checkpoint)";
    OROCHI_ASSIGN_OR_RETURN(e->configs_, planner::load_model_configs("h3"));
    e->transformer_config_ = e->configs_->transformer;
  } else {
    e->models_ = pipeline::demo_t2va_models(kDemoWeightSeed);
    e->transformer_config_ = e->models_.transformer.config;
  }
  OROCHI_RETURN_IF_ERROR(e->merge_loras());
  e->open_load_s_ = seconds_since(t_load);
  return e;
}

// The LoRAs merge into the host weights in f32, before any upload: the CPU forward and the GPU
// upload (which rounds the merged f32 weights to bf16) both see them.
Status Engine::merge_loras() {
  if (source_.loras.empty()) return Status::ok();
  if (source_.random_weights)
    return invalid_argument("--lora merges into host weights, and --random-weights makes its weights on the GPU: "
                            "use a model folder or the demo model");
  for (const LoraSource& l : source_.loras) {
    OROCHI_ASSIGN_OR_RETURN(const h3::H3Lora lora, h3::read_lora(l.path, models_.transformer.config));
    const auto t0 = Clock::now();
    OROCHI_RETURN_IF_ERROR(h3::merge_lora(models_.transformer, lora, l.strength));
    loras_.push_back({{"file", l.path},
                      {"strength", l.strength},
                      {"format", h3::lora_format_name(lora.format)},
                      {"parameters", lora.deltas.size()},
                      {"merge_s", seconds_since(t0)}});
    note("LoRA " + l.path + " (" + h3::lora_format_name(lora.format) + ", " + std::to_string(lora.deltas.size()) +
         " parameters) merged at strength " + std::to_string(l.strength));
  }
  return Status::ok();
}

}  // namespace orochi::engine
