// POST /v1/videos's fields: the OpenAI videos API's (prompt, model, size, seconds), the names
// SGLang and vLLM-Omni add (num_frames, num_inference_steps, width/height, fps), and ours (frames,
// steps, seed, shifts, a sampling preset or sigma lists, fl2va keyframes, ref2va references, the
// LoRAs to run from those the server offers). Every field is checked for its type and for the limits the command line holds
// (apps/request_limits.h); unknown fields are refused by name; the engine's own checks
// (Engine::check_conditioning, Engine::plan) follow before the job is queued. A multipart request
// gives the same fields as text parts (parsed as JSON values where the field is not a string) and
// its reference files as file parts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/server/api_error.h"
#include "apps/server/lora_catalog.h"
#include "apps/server/media_root.h"
#include "engine/generate_request.h"

namespace orochi::apps::server {

// What the server's model and start-up options let a request ask for.
struct RequestRules {
  std::string model_id;            // `model`, when given, must be this (GET /v1/models lists it)
  bool prompt_conditions = true;   // false: the model has no text encoder (the demo): the prompt is recorded only
  std::vector<OfferedLora> loras;  // what `loras` may name (lora_catalog.h)
  const MediaRoot* media = nullptr;  // reference paths resolve here; null: no paths
};

// A reference file uploaded in a multipart request, already saved into the job's inputs/ folder.
struct UploadedFile {
  std::string field;         // "image", "last_image", "input_reference", "reference"
  std::string filename;      // as the client named it (shown, never used as a path)
  std::string content_type;  // "reference": image/..., video/... or audio/... says its kind
  std::string path;          // where the server saved it
};

struct VideoRequest {
  engine::GenerateRequest request;  // for Engine::plan: references with their server paths
  std::string prompt;
  std::string model;                // as asked ("" when not given)
  std::vector<nlohmann::json> references;  // {"type", "name"} per reference, in order (name: path or upload)
  std::vector<nlohmann::json> loras;       // {"name", "strength"} per LoRA the job runs, in order
};

// Checks `body` (a JSON object) and the uploads into a request. The first fault is returned with
// `param` naming the field.
ApiResult<VideoRequest> parse_video_request(const nlohmann::json& body, const std::vector<UploadedFile>& uploads,
                                            const RequestRules& rules);

// A multipart text part as the JSON value of its field: the text itself for string fields, else
// the text parsed as JSON ("8" -> 8, "true" -> true, "[1, 0]" -> an array); refused when it is not
// JSON or is not valid UTF-8.
ApiResult<nlohmann::json> multipart_field_value(const std::string& field, const std::string& text);

// The fields a multipart request takes as files.
bool is_file_field(const std::string& field);

// The request as the job records it (request.json) and the API shows it: the accepted fields with
// the values the engine resolved (`planned`: RunPlan::request): size, frames, seconds, steps,
// shifts, seed, workflow.
nlohmann::json accepted_request_json(const VideoRequest& asked, const engine::GenerateRequest& planned,
                                     const std::string& workflow, bool prompt_conditions);

// The frames for `seconds` at 24 fps: the fewest 17n + 5 frames that last at least that long.
int64_t frames_for_seconds(int64_t seconds);

// A video's length in seconds as the API's `seconds` string: "5.17" for 124 frames.
std::string seconds_text(int64_t frames);

bool is_valid_utf8(const std::string& text);

}  // namespace orochi::apps::server
