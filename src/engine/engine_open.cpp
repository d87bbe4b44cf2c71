// Engine::open: the options and devices checked, the host weights read once (a model folder, a
// transformer folder or file, the demo, or nothing for random weights), LoRAs merged.
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/stopwatch.h"
#include "core/format.h"
#include "core/host_memory.h"
#include "engine/gpu_capability.h"
#include "engine/model_components.h"
#include "models/h3/lora.h"
#include "models/h3/summary.h"
#include "models/h3/weights.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/weights.h"
#include "models/qwen3vl/text_weights.h"
#include "models/qwen3vl/vision_config.h"
#include "planner/parallel_choice.h"
#include "weights/component_source.h"
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
  std::lock_guard<std::mutex> lock(note_mutex_);
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

// A GPU run keeps the transformer's weights as stored (mapped from the file) but dequantizes FP8
// weights into bf16 copies in host RAM: refused before any is read when they cannot fit. Returns
// the transformer's host bytes as loaded (for the plan).
static Expected<uint64_t> check_transformer_host_ram(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const weights::Checkpoint ckpt, weights::Checkpoint::open(path));
  const h3::HostBytes bytes = h3::host_bytes_as_loaded(ckpt);
  const uint64_t have = available_ram_bytes();
  if (have != 0 && bytes.copies > have * 9 / 10)
    return invalid_argument(path + ": its FP8 weights dequantize to " + format_bytes(bytes.copies) + " of bf16 copies in "
                            "host RAM before the upload, and " + format_bytes(have) + " is available; free host "
                            "memory or use a bf16 checkpoint (whose weights are mapped, not copied)");
  return bytes.total();
}

// The four configs a GPU run is planned from, for a source made of parts: the loaded models' own
// and the text encoder's (its config.json, or the released Qwen3-VL-32B config for a single file).
static Expected<planner::ModelConfigs> component_configs(const pipeline::T2vaModels& m, const std::string& text_encoder,
                                                         uint64_t transformer_host_bytes) {
  planner::ModelConfigs c;
  c.source = m.name;
  c.transformer = m.transformer.config;
  c.video_vae = m.video_vae.config;
  c.audio_vae = m.audio_vae.config;
  OROCHI_ASSIGN_OR_RETURN(const qwen3vl::TextComponent text, qwen3vl::text_encoder_component(text_encoder));
  c.text_encoder = text.config;
  OROCHI_ASSIGN_OR_RETURN(const weights::ComponentConfig found, weights::component_config(text_encoder, "--text-encoder"));
  if (found.config && found.config->contains("vision_config")) {
    OROCHI_ASSIGN_OR_RETURN(c.vision, qwen3vl::VisionConfig::from_json(*found.config));
  }
  // A smaller test model conditions on its last hidden state when it has fewer than 50 layers.
  c.text_layers = std::min<int64_t>(50, text.config.num_hidden_layers);
  c.transformer_host_bytes = transformer_host_bytes;
  return c;
}

// The models of a source made of parts (engine/model_components.h): the transformer from its file
// or MODEL_DIR's folder, each VAE from its file or folder; a part nobody gives is the demo model's
// (without MODEL_DIR and --comfy-models), whose channels the others must then match.
static Expected<pipeline::T2vaModels> load_components(const ModelSource& source, const ModelComponents& parts,
                                                      bool on_gpu, std::vector<std::string>* described,
                                                      uint64_t* transformer_host_bytes) {
  namespace fs = std::filesystem;
  const bool demo_parts = !source.dir && !source.comfy_models;
  pipeline::T2vaModels m;
  if (demo_parts) m = pipeline::demo_t2va_models(kDemoWeightSeed);
  std::vector<std::string> given;
  if (parts.transformer_file) {
    const std::string& file = *parts.transformer_file;
    OROCHI_ASSIGN_OR_RETURN(const auto config, h3::transformer_file_config(file, source.transformer_config));
    if (!on_gpu) OROCHI_RETURN_IF_ERROR(check_config_fits_ram(config.first));
    if (demo_parts && !parts.vae && !parts.audio_vae) {
      const h3::H3Config demo = m.transformer.config;
      if (config.first.in_channels != demo.in_channels || config.first.audio_in_channels != demo.audio_in_channels)
        return invalid_argument("--transformer " + file + " (config from " + config.second + ") denoises " +
                                std::to_string(config.first.in_channels) + " video / " +
                                std::to_string(config.first.audio_in_channels) +
                                " audio latent channels; without MODEL_DIR it runs with the demo model's VAEs, "
                                "which decode " + std::to_string(demo.in_channels) + " / " +
                                std::to_string(demo.audio_in_channels) + ": pass MODEL_DIR for its VAEs (or --vae "
                                "and --audio-vae)");
    }
    if (on_gpu) {
      OROCHI_ASSIGN_OR_RETURN(*transformer_host_bytes, check_transformer_host_ram(file));
    }
    OROCHI_ASSIGN_OR_RETURN(h3::TransformerFile loaded, read_transformer_file(source, file, on_gpu));
    m.transformer = std::move(loaded.weights);
    described->push_back("transformer " + file + ": " + loaded.layout + "; config from " + loaded.config_from);
    given.push_back("the transformer " + file);
  } else if (source.dir) {
    const std::string folder = parts.folder->opening_folder();  // resolve_components read MODEL_DIR's layout
    if (!on_gpu) OROCHI_RETURN_IF_ERROR(check_transformer_fits_ram(folder));
    if (on_gpu) {
      OROCHI_ASSIGN_OR_RETURN(*transformer_host_bytes, check_transformer_host_ram(folder));
    }
    OROCHI_ASSIGN_OR_RETURN(m.transformer, h3::load_weights(folder, on_gpu));
  }
  if (parts.vae) {
    OROCHI_ASSIGN_OR_RETURN(const h3vae::VaeComponent vae, h3vae::open_video_vae(*parts.vae));
    OROCHI_ASSIGN_OR_RETURN(m.video_vae, h3vae::load_decoder_weights(vae));
    m.video_encoder.reset();  // the demo's would not pair with this decoder; read on first use
    if (source.vae) {
      described->push_back("video VAE " + vae.describe());
      given.push_back("the video VAE " + *parts.vae);
    }
  }
  if (parts.audio_vae) {
    OROCHI_ASSIGN_OR_RETURN(const h3_audio::AudioVaeComponent vae, h3_audio::open_audio_vae(*parts.audio_vae));
    OROCHI_ASSIGN_OR_RETURN(m.audio_vae, h3_audio::load_decoder(vae));
    m.audio_encoder.reset();
    if (source.audio_vae) {
      described->push_back("audio VAE " + vae.describe());
      given.push_back("the audio VAE " + *parts.audio_vae);
    }
  }
  std::string with;
  for (size_t i = 0; i < given.size(); ++i) with += (i ? ", " : " with ") + given[i];
  if (source.dir) m.name = *source.dir + with;
  else if (source.comfy_models) m.name = "ComfyUI models " + *source.comfy_models + with;
  else m.name = "the demo model" + with + (given.size() < 3 ? " (its other parts random)" : "");
  m.demo = false;
  OROCHI_RETURN_IF_ERROR(pipeline::check_t2va_models(m));
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
  if ((source.transformer_config || source.qkv_order != "auto") && !source.transformer_file && !source.comfy_models)
    return usage_error("--transformer-config and --qkv-order describe a --transformer FILE");
  // Where it runs: a checkpoint or random weights default to the first GPU when there is one.
  std::string device = options.device;
  if (device.empty())
    device = (source.dir || source.comfy_models || source.random_weights) && gpu_backend().device_count() > 0 ? "cuda:0"
                                                                                                         : "cpu";
  OROCHI_ASSIGN_OR_RETURN(e->device_, normalized_device(device, &e->first_gpu_));
  e->on_gpu_ = e->device_ != "cpu";
  if (options.gpus < 1 || options.gpus > 64)
    return usage_error("--gpus must be in [1, 64], got " + std::to_string(options.gpus));
  if (options.gpus > 1 && !e->on_gpu_)
    return invalid_argument("--gpus " + std::to_string(options.gpus) + " needs --device cuda");
  if (options.comm_timeout_s < 1) return usage_error("--comm-timeout must be >= 1 second");
  // fp8 / int8 are the GPU denoiser's (quantized weights, cuBLASLt fp8 / int8 GEMMs); the CPU
  // path is the f32 reference, and the quantized forward runs on one GPU for now.
  if (options.precision != Precision::kBf16 && !e->on_gpu_)
    return unsupported(std::string("--precision ") + precision_name(options.precision) +
                       " runs the denoiser's quantized linears on a GPU; the CPU path computes in f32: add --device "
                       "cuda, or drop --precision");
  if (options.switches.conditioner_precision != Precision::kBf16 && !e->on_gpu_)
    return unsupported(std::string("--set conditioner-precision=") +
                       precision_name(options.switches.conditioner_precision) +
                       " runs the text encoder's quantized linears on a GPU; the CPU path computes in f32: add "
                       "--device cuda, or drop the switch");
  if (options.precision != Precision::kBf16 && options.gpus > 1)
    return unsupported(std::string("--precision ") + precision_name(options.precision) +
                       " runs on one GPU for now (issue 25): use --gpus 1, or --precision bf16 on " +
                       std::to_string(options.gpus) + " GPUs");
  if (Status s = planner::parse_parallel_choice(options.parallel).status(); !s.is_ok()) return usage_error(s.message());
  if (source.random_weights && !e->on_gpu_)
    return invalid_argument("--random-weights makes the full-size model, which needs a GPU: add --device cuda");
  if (e->on_gpu_) OROCHI_RETURN_IF_ERROR(check_gpus_visible(e->first_gpu_, options.gpus));
  // What these GPUs can run (engine/gpu_capability.h: a Hopper switch off compute capability 9.0,
  // fp8 below 8.9), refused before any weight is read; kept resolved, so the plan and the report
  // show what runs (e.g. bf16 attention under --precision fp8 on a GPU without the sm_90a kernels).
  if (e->on_gpu_) {
    OROCHI_ASSIGN_OR_RETURN(e->options_.switches, gpu_switches(options.switches, options.precision, e->first_gpu_,
                                                               options.gpus));
  }
  OROCHI_RETURN_IF_ERROR(check_attention_precision(e->options_.switches, options.precision, e->on_gpu_, options.gpus));

  // Where each part comes from, before any weight is read; then the host weights, read once for
  // every request of this engine.
  OROCHI_ASSIGN_OR_RETURN(e->components_, resolve_components(source));
  if (source.random_weights && e->components_.overrides)
    return invalid_argument("--random-weights makes every weight of the released shapes; --transformer, --vae, "
                            "--audio-vae and --text-encoder give weights: pass one or the other");
  for (const std::string& line : e->components_.notes) e->note(line);
  if (e->components_.folder) e->partition_ = e->components_.folder->opening_partition();  // Ref2VA/ alone: its own
  const auto t_load = Clock::now();
  e->family_ = model_families().front();  // the demo and random weights are MiniMax-H3's
  if (e->components_.overrides && !source.transformer_dir) {
    if (source.dir) {
      OROCHI_ASSIGN_OR_RETURN(e->family_, detect_family(*source.dir));
    }
    std::vector<std::string> described;
    uint64_t host_bytes = 0;
    OROCHI_ASSIGN_OR_RETURN(e->models_, load_components(source, e->components_, e->on_gpu_, &described, &host_bytes));
    e->transformer_config_ = e->models_.transformer.config;
    for (const std::string& line : described) e->note(line);
    if (e->on_gpu_ && e->components_.text_encoder) {
      OROCHI_ASSIGN_OR_RETURN(e->configs_, component_configs(e->models_, *e->components_.text_encoder, host_bytes));
    }
  } else if (source.dir) {
    const std::string& dir = *source.dir;
    OROCHI_ASSIGN_OR_RETURN(e->family_, detect_family(dir));
    const std::string transformer = e->components_.folder->opening_folder();
    if (!e->on_gpu_) OROCHI_RETURN_IF_ERROR(check_transformer_fits_ram(transformer));
    if (e->on_gpu_) OROCHI_RETURN_IF_ERROR(check_transformer_host_ram(transformer).status());
    // A GPU run keeps the denoiser's weights as stored (bf16 views of the files): its upload converts.
    OROCHI_ASSIGN_OR_RETURN(e->models_, pipeline::load_t2va_models(dir, e->on_gpu_));
    e->transformer_config_ = e->models_.transformer.config;
    // A GPU run is planned from the four configs; a folder without text_encoder/ has no full set
    // and runs unplanned unless a prompt needs it (plan() says so).
    if (e->on_gpu_ && std::filesystem::exists(e->components_.folder->text_encoder + "/config.json")) {
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
  // The release's Ref2VA/ alone opens on its ref2va partition: its LoRAs are Ref2VA's.
  OROCHI_RETURN_IF_ERROR(e->merge_loras(e->partition_ == "transformer_ref" ? h3::LoraPartition::kTransformerRef
                                                                           : h3::LoraPartition::kTransformer));
  e->open_load_s_ = seconds_since(t_load);
  return e;
}

// The LoRAs merge into the host weights in f32, before any upload: the CPU forward and the GPU
// upload (which rounds the merged f32 weights to bf16) both see them.
Status Engine::merge_loras(h3::LoraPartition partition) {
  loras_.clear();
  if (source_.loras.empty()) return Status::ok();
  if (source_.random_weights)
    return invalid_argument("--lora merges into host weights, and --random-weights makes its weights on the GPU: "
                            "use a model folder or the demo model");
  // A checkpoint folder's two partitions are swapped per workflow (use_partition): a LoRA that names
  // the other one (diffusers' transformer_ref. / transformer. keys) waits until a request runs on it.
  const bool swapped_partitions = source_.dir && !components_.transformer_file;
  for (const LoraSource& l : source_.loras) {
    OROCHI_ASSIGN_OR_RETURN(const weights::LoraFile file, weights::read_lora_file(l.path));
    if (const std::optional<h3::LoraPartition> named = h3::declared_partition(file);
        swapped_partitions && named && *named != partition) {
      note("LoRA " + l.path + " is for the " +
           (*named == h3::LoraPartition::kTransformerRef ? "transformer_ref/ partition (ref2va)"
                                                         : "transformer/ partition (t2va, fl2va)") +
           ": merged when a request runs on it; this one runs without it");
      continue;
    }
    OROCHI_ASSIGN_OR_RETURN(const h3::H3Lora lora, h3::map_lora(file, models_.transformer.config, partition));
    const size_t changed = h3::changed_parameters(lora);  // pairs and full-rank deltas
    const auto t0 = Clock::now();
    OROCHI_RETURN_IF_ERROR(h3::merge_lora(models_.transformer, lora, l.strength));
    loras_.push_back({{"file", l.path},
                      {"strength", l.strength},
                      {"format", h3::lora_format_name(lora.format)},
                      {"parameters", changed},
                      {"merge_s", seconds_since(t0)}});
    note("LoRA " + l.path + " (" + h3::lora_format_name(lora.format) + ", " + std::to_string(changed) +
         " parameters) merged at strength " + std::to_string(l.strength));
  }
  return Status::ok();
}

}  // namespace orochi::engine
