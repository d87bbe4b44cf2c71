// The model-source options of every command that opens a model for a run (`generate`, `serve`):
// [MODEL_DIR], --random-weights, --transformer FILE, --transformer-config FILE, --qkv-order,
// --lora FILE[:STRENGTH] (repeatable), the single parts --text-encoder, --vae, --audio-vae (files or
// folders), --tokenizer DIR, and --comfy-models DIR (a ComfyUI models/ folder). One parser, so a new
// source lands in every command at once.
#pragma once

#include <set>
#include <string>

#include "apps/args.h"
#include "core/status.h"
#include "engine/engine_options.h"

namespace orochi::apps {

// Adds the options' names to a command's option sets.
void add_model_source_options(std::set<std::string>& valued, std::set<std::string>& flags,
                              std::set<std::string>& repeatable);

// The source these options name; `command` ("generate") words the error for more than one MODEL_DIR.
// Without MODEL_DIR and --random-weights: the built-in demo model (ModelSource::demo()).
Expected<engine::ModelSource> parse_model_source(const Args& args, const std::string& command);

// `--lora FILE[:STRENGTH]` (strength 1 when absent).
Expected<engine::LoraSource> parse_lora_option(const std::string& value);

}  // namespace orochi::apps
