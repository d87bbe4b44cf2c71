// Engine::use_partition: the denoiser weights a workflow runs on (MODELS_H3.md §2). A MiniMax-H3
// folder holds two partitions of one architecture: transformer/ (the release's FL2VA: t2va, fl2va)
// and transformer_ref/ (Ref2VA: ref2va); in the original release's layout FL2VA/transformer and
// Ref2VA/transformer (h3::FolderParts). The engine holds one in host RAM at a time (each is 62 GiB
// as released): a request for the other reads it in place of the held one, merges the LoRAs again
// for its partition, and drops the GPU models made from the old one; the next request for the
// first reads that back. A transformer given as a file (--transformer, a ComfyUI tree) is the one
// the user chose for every workflow.
#include <filesystem>

#include "core/stopwatch.h"
#include "engine/engine.h"
#include "models/h3/weights.h"

namespace orochi::engine {
namespace {

bool same_architecture(const h3::H3Config& a, const h3::H3Config& b) {
  return a.num_attention_heads == b.num_attention_heads && a.attention_head_dim == b.attention_head_dim &&
         a.hidden_size == b.hidden_size && a.num_layers == b.num_layers && a.num_refiner_layers == b.num_refiner_layers &&
         a.ffn_dim == b.ffn_dim && a.in_channels == b.in_channels && a.audio_in_channels == b.audio_in_channels &&
         a.patch_size == b.patch_size && a.text_dim == b.text_dim;
}

}  // namespace

Status Engine::use_partition(const std::string& workflow, RunReport& report) {
  if (!source_.dir || components_.transformer_file) return Status::ok();  // the demo, random weights, a given file
  const std::string wanted = workflow == "ref2va" ? "transformer_ref" : "transformer";
  if (wanted == partition_) return Status::ok();
  // The folder by MODEL_DIR's layout (h3::FolderParts: diffusers transformer_ref/, or the release's
  // Ref2VA/transformer), refused naming the folder to pass when MODEL_DIR lacks it.
  OROCHI_ASSIGN_OR_RETURN(const std::string folder, components_.folder->partition_folder(workflow));
  if (!std::filesystem::exists(std::filesystem::path(folder) / "config.json"))
    return not_found(folder + "/config.json is missing: " + workflow + " runs on the " + wanted +
                     "/ partition of the checkpoint (the release's " + (wanted == "transformer" ? "FL2VA" : "Ref2VA") +
                     " transformer)");
  const auto t0 = Clock::now();
  gpu_.reset();                              // the GPU models hold the other partition's weights
  partition_.clear();                        // nothing held until the read below succeeds
  models_.transformer = h3::H3Weights{};     // its host memory goes before the other's is read
  OROCHI_ASSIGN_OR_RETURN(h3::H3Weights weights, h3::load_weights(folder, on_gpu_));
  if (!same_architecture(weights.config, transformer_config_))
    return unsupported(folder + " is not the architecture of the checkpoint's other partition (" +
                       weights.config.summary() + "): both partitions must come from one MiniMax-H3 release");
  models_.transformer = std::move(weights);
  OROCHI_RETURN_IF_ERROR(merge_loras(wanted == "transformer_ref" ? h3::LoraPartition::kTransformerRef
                                                                 : h3::LoraPartition::kTransformer));
  partition_ = wanted;
  note(workflow + " runs on " + folder + " (read in place of the other partition)");
  report.load_s += seconds_since(t0);
  return Status::ok();
}

}  // namespace orochi::engine
