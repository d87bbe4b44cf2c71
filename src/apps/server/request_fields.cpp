#include "apps/server/request_fields.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "apps/request_limits.h"

namespace orochi::apps::server {
namespace {

using Json = nlohmann::json;
using Kind = engine::ReferenceInput::Kind;

constexpr size_t kPromptMaxBytes = 64 * 1024;
constexpr size_t kReferencesMax = 64;  // the engine's limit (12) is checked by the engine; this bounds the work
constexpr int64_t kSecondsMax = (limits::kFramesMax - 5) / 24;

enum class Type { kString, kInteger, kNumber, kBool, kArray, kStringOrInteger };

struct Field {
  const char* name;
  Type type;
};

// Every field a request may hold (README's table describes each).
constexpr Field kFields[] = {
    {"prompt", Type::kString},          {"model", Type::kString},          {"size", Type::kString},
    {"width", Type::kInteger},          {"height", Type::kInteger},        {"seconds", Type::kStringOrInteger},
    {"frames", Type::kInteger},         {"num_frames", Type::kInteger},    {"fps", Type::kInteger},
    {"steps", Type::kInteger},          {"num_inference_steps", Type::kInteger},
    {"seed", Type::kInteger},           {"video_shift", Type::kNumber},    {"audio_shift", Type::kNumber},
    {"preset", Type::kString},          {"sigmas", Type::kArray},          {"audio_sigmas", Type::kArray},
    {"image", Type::kString},           {"input_reference", Type::kString}, {"last_image", Type::kString},
    {"references", Type::kArray},       {"ref_video_audio", Type::kBool},  {"ref_size", Type::kString},
    {"loras", Type::kArray},
};

// Fields other servers take that mean nothing for this model: refused with the reason.
const char* refused_reason(const std::string& name) {
  if (name == "negative_prompt" || name == "guidance_scale" || name == "guidance_scale_2" || name == "true_cfg_scale")
    return "MiniMax-H3 is guidance-distilled (one forward per step, no unconditional pass): it takes no negative "
           "prompt or guidance scale";
  if (name == "n") return "one video per request: send one request per video";
  return nullptr;
}

const Field* find_field(const std::string& name) {
  for (const Field& f : kFields)
    if (name == f.name) return &f;
  return nullptr;
}

std::string field_list() {
  std::string out;
  for (const Field& f : kFields) out += std::string(out.empty() ? "" : ", ") + f.name;
  return out;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::kString: return "a string";
    case Type::kInteger: return "an integer";
    case Type::kNumber: return "a number";
    case Type::kBool: return "true or false";
    case Type::kArray: return "an array";
    case Type::kStringOrInteger: return "a string of digits or an integer";
  }
  return "";
}

bool has_type(const Json& v, Type t) {
  switch (t) {
    case Type::kString: return v.is_string();
    case Type::kInteger: return v.is_number_integer();
    case Type::kNumber: return v.is_number();
    case Type::kBool: return v.is_boolean();
    case Type::kArray: return v.is_array();
    case Type::kStringOrInteger: return v.is_string() || v.is_number_integer();
  }
  return false;
}

std::string json_kind(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number with a fraction";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

ApiResult<int64_t> integer_in(const Json& body, const char* name, int64_t min, int64_t max) {
  const Json& v = body.at(name);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return bad_request(std::string(name) + " must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]", name);
  const int64_t n = v.get<int64_t>();
  if (n < min || n > max)
    return bad_request(std::string(name) + " must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                           std::to_string(n),
                       name);
  return n;
}

ApiResult<double> positive_number(const Json& body, const char* name) {
  const double x = body.at(name).get<double>();
  if (!std::isfinite(x) || x <= 0) return bad_request(std::string(name) + " must be a finite number > 0", name);
  return x;
}

ApiResult<std::vector<double>> number_list(const Json& body, const char* name) {
  std::vector<double> out;
  for (const Json& v : body.at(name)) {
    if (!v.is_number()) return bad_request(std::string(name) + " must be an array of numbers", name);
    out.push_back(v.get<double>());
  }
  if (out.size() > static_cast<size_t>(limits::kStepsMax) + 1)
    return bad_request(std::string(name) + " holds at most " + std::to_string(limits::kStepsMax + 1) + " values", name);
  return out;
}

// "WxH" with each side in the canvas limits (the multiple of 32 is the engine's check, with its advice).
ApiResult<std::pair<int64_t, int64_t>> parse_size(const std::string& size) {
  const size_t x = size.find('x');
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const std::string w = x == std::string::npos ? "" : size.substr(0, x), h = x == std::string::npos ? "" : size.substr(x + 1);
  if (!digits(w) || !digits(h))
    return bad_request("size must be WIDTHxHEIGHT in pixels, e.g. \"320x192\", got \"" + size.substr(0, 40) + "\"", "size");
  const int64_t width = std::stoll(w), height = std::stoll(h);
  for (int64_t side : {width, height})
    if (side < limits::kCanvasMinSide || side > limits::kCanvasMaxSide)
      return bad_request("size: each side must be " + std::to_string(limits::kCanvasMinSide) + " to " +
                             std::to_string(limits::kCanvasMaxSide) + " px (multiples of 32), got \"" + size + "\"",
                         "size");
  return std::pair{width, height};
}

Kind reference_kind(const std::string& type) {
  if (type == "image") return Kind::kImage;
  if (type == "video") return Kind::kVideo;
  return Kind::kAudio;
}

const char* type_of_kind(Kind kind) {
  switch (kind) {
    case Kind::kFirstFrame: return "first_frame";
    case Kind::kLastFrame: return "last_frame";
    case Kind::kImage: return "image";
    case Kind::kVideo: return "video";
    case Kind::kAudio: return "audio";
  }
  return "";
}

}  // namespace

bool is_valid_utf8(const std::string& text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= n) return false;  // cut short
    for (size_t k = 1; k <= extra; ++k) {
      const unsigned char d = static_cast<unsigned char>(text[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += extra + 1;
  }
  return true;
}

bool is_file_field(const std::string& field) {
  return field == "image" || field == "last_image" || field == "input_reference" || field == "reference";
}

ApiResult<Json> multipart_field_value(const std::string& field, const std::string& text) {
  if (!is_valid_utf8(text)) return bad_request(field + " is not valid UTF-8 text", field);
  const Field* f = find_field(field);
  if (f == nullptr || f->type == Type::kString || f->type == Type::kStringOrInteger) return Json(text);
  try {
    return Json::parse(text);
  } catch (const Json::exception&) {
    return bad_request(field + " must be " + type_name(f->type) + " (as JSON text in a form field), got \"" +
                           text.substr(0, 40) + "\"",
                       field);
  }
}

int64_t frames_for_seconds(int64_t seconds) {
  const int64_t wanted = seconds * 24;
  const int64_t n = std::max<int64_t>(0, (wanted - 5 + 16) / 17);
  return 17 * n + 5;
}

std::string seconds_text(int64_t frames) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(frames) / 24.0);
  return text;
}

ApiResult<VideoRequest> parse_video_request(const Json& body, const std::vector<UploadedFile>& uploads,
                                            const RequestRules& rules) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object, got " + json_kind(body));
  for (const auto& [name, value] : body.items()) {
    if (const char* why = refused_reason(name)) return bad_request(name + ": " + why, name);
    const Field* f = find_field(name);
    if (f == nullptr)
      return bad_request("unknown field '" + name.substr(0, 60) + "'; the fields are: " + field_list(), name);
    if (!has_type(value, f->type))
      return bad_request(name + " must be " + type_name(f->type) + ", got " + json_kind(value), name);
  }
  VideoRequest out;
  engine::GenerateRequest& r = out.request;
  auto has = [&](const char* name) { return body.contains(name); };

  if (!has("prompt")) return bad_request("prompt is required: the text of the video to make", "prompt");
  out.prompt = body["prompt"].get<std::string>();
  if (out.prompt.empty()) return bad_request("prompt is empty: give the text of the video to make", "prompt");
  if (out.prompt.size() > kPromptMaxBytes)
    return bad_request("prompt is longer than " + std::to_string(kPromptMaxBytes) + " bytes", "prompt");
  if (rules.prompt_conditions) r.prompt = out.prompt;

  if (has("model")) {
    out.model = body["model"].get<std::string>();
    if (out.model != rules.model_id)
      return bad_request("this server serves the model '" + rules.model_id + "' (GET /v1/models), not '" +
                             out.model.substr(0, 80) + "': leave model out or send that name",
                         "model");
  }

  // Canvas: size "WxH", or width and height (vLLM-Omni's), not both.
  if (has("size") && (has("width") || has("height")))
    return bad_request("give size or width and height, not both", "size");
  if (has("width") != has("height")) return bad_request("width and height go together", has("width") ? "height" : "width");
  if (has("size")) {
    ApiResult<std::pair<int64_t, int64_t>> size = parse_size(body["size"].get<std::string>());
    if (!size) return size.error();
    r.width = size->first;
    r.height = size->second;
  } else if (has("width")) {
    ApiResult<int64_t> w = integer_in(body, "width", limits::kCanvasMinSide, limits::kCanvasMaxSide);
    if (!w) return w.error();
    ApiResult<int64_t> h = integer_in(body, "height", limits::kCanvasMinSide, limits::kCanvasMaxSide);
    if (!h) return h.error();
    r.width = *w;
    r.height = *h;
  }

  // Length: seconds (OpenAI's), or frames / num_frames; one of them.
  const int lengths = has("seconds") + has("frames") + has("num_frames");
  if (lengths > 1) return bad_request("give one of seconds, frames and num_frames", has("seconds") ? "seconds" : "frames");
  if (has("seconds")) {
    const Json& s = body["seconds"];
    int64_t seconds = 0;
    if (s.is_string()) {
      const std::string t = s.get<std::string>();
      if (t.empty() || t.size() > 6 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return bad_request("seconds must be a whole number of seconds, e.g. \"5\", got \"" + t.substr(0, 20) + "\"",
                           "seconds");
      seconds = std::stoll(t);
    } else {
      ApiResult<int64_t> n = integer_in(body, "seconds", 1, kSecondsMax);
      if (!n) return n.error();
      seconds = *n;
    }
    if (seconds < 1 || seconds > kSecondsMax)
      return bad_request("seconds must be 1 to " + std::to_string(kSecondsMax) + ", got " + std::to_string(seconds),
                         "seconds");
    r.frames = frames_for_seconds(seconds);
  } else if (has("frames") || has("num_frames")) {
    const char* name = has("frames") ? "frames" : "num_frames";
    ApiResult<int64_t> f = integer_in(body, name, limits::kFramesMin, limits::kFramesMax);
    if (!f) return f.error();
    r.frames = *f;
  }
  if (has("fps") && body["fps"].get<int64_t>() != 24)
    return bad_request("fps: MiniMax-H3 makes 24 fps video; leave fps out or send 24", "fps");

  // Steps: ours count denoiser evaluations; num_inference_steps is diffusers' (and SGLang's,
  // vLLM-Omni's) count, one more.
  if (has("steps") && has("num_inference_steps"))
    return bad_request("give steps (denoiser evaluations) or num_inference_steps (that plus one), not both", "steps");
  if (has("steps")) {
    ApiResult<int64_t> n = integer_in(body, "steps", limits::kStepsMin, limits::kStepsMax);
    if (!n) return n.error();
    r.steps = *n;
  } else if (has("num_inference_steps")) {
    ApiResult<int64_t> n = integer_in(body, "num_inference_steps", limits::kStepsMin + 1, limits::kStepsMax + 1);
    if (!n) return n.error();
    r.steps = *n - 1;
  }
  if (has("seed")) {
    const Json& s = body["seed"];
    if (!s.is_number_unsigned()) return bad_request("seed must be an integer from 0 to 2^64 - 1", "seed");
    r.seed = s.get<uint64_t>();
  }
  for (auto [name, out_shift] : {std::pair{"video_shift", &r.video_shift}, std::pair{"audio_shift", &r.audio_shift}})
    if (has(name)) {
      ApiResult<double> x = positive_number(body, name);
      if (!x) return x.error();
      *out_shift = *x;
    }
  if (has("preset")) r.preset = body["preset"].get<std::string>();
  for (auto [name, list] : {std::pair{"sigmas", &r.video_sigmas}, std::pair{"audio_sigmas", &r.audio_sigmas}})
    if (has(name)) {
      ApiResult<std::vector<double>> values = number_list(body, name);
      if (!values) return values.error();
      *list = std::move(values).operator*();
    }

  // References, in the order they are given: the keyframes, then `references` (paths) or the
  // uploaded `reference` files.
  bool video_audio = true;
  if (has("ref_video_audio")) video_audio = body["ref_video_audio"].get<bool>();
  auto add = [&](Kind kind, const std::string& path, const std::string& name) {
    engine::ReferenceInput in;
    in.kind = kind;
    in.path = path;
    in.video_audio = video_audio;
    r.references.push_back(std::move(in));
    out.references.push_back({{"type", type_of_kind(kind)}, {"name", name}});
  };
  auto resolve = [&](const std::string& relative, const std::string& param) -> ApiResult<std::string> {
    static const MediaRoot kNone;
    Expected<std::string> path = (rules.media ? *rules.media : kNone).resolve(relative);
    if (!path) return from_status(path.status().with_context(param), param);
    return *path;
  };
  auto uploaded = [&](const std::string& field) {
    std::vector<const UploadedFile*> found;
    for (const UploadedFile& u : uploads)
      if (u.field == field) found.push_back(&u);
    return found;
  };
  if (has("image") && has("input_reference"))
    return bad_request("image and input_reference both name the first frame: give one", "input_reference");
  for (const char* field : {"image", "input_reference", "last_image"}) {
    const Kind kind = std::string(field) == "last_image" ? Kind::kLastFrame : Kind::kFirstFrame;
    const auto files = uploaded(field);
    if (has(field) && !files.empty()) return bad_request(std::string(field) + " is given as a path and as a file", field);
    if (files.size() > 1) return bad_request(std::string(field) + " is given " + std::to_string(files.size()) + " times", field);
    if (has(field)) {
      const std::string relative = body[field].get<std::string>();
      ApiResult<std::string> path = resolve(relative, field);
      if (!path) return path.error();
      add(kind, *path, relative);
    } else if (!files.empty()) {
      add(kind, files[0]->path, files[0]->filename);
    }
  }
  const auto reference_files = uploaded("reference");
  if (has("references") && !reference_files.empty())
    return bad_request("give references as paths (references) or as uploaded files (reference), not both", "references");
  if (has("references")) {
    const Json& list = body["references"];
    if (list.size() > kReferencesMax)
      return bad_request("references: at most 12 references, got " + std::to_string(list.size()), "references");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string param = "references[" + std::to_string(i) + "]";
      const Json& item = list[i];
      if (!item.is_object()) return bad_request(param + " must be an object {\"type\", \"path\"}", param);
      for (const auto& [key, value] : item.items())
        if (key != "type" && key != "path") return bad_request(param + ": unknown field '" + key.substr(0, 40) + "'", param);
      if (!item.contains("type") || !item["type"].is_string() || !item.contains("path") || !item["path"].is_string())
        return bad_request(param + " must be {\"type\": \"image\"|\"video\"|\"audio\", \"path\": \"...\"}", param);
      const std::string type = item["type"].get<std::string>();
      if (type != "image" && type != "video" && type != "audio")
        return bad_request(param + ".type must be image, video or audio, got \"" + type.substr(0, 20) + "\"", param);
      const std::string relative = item["path"].get<std::string>();
      ApiResult<std::string> path = resolve(relative, param + ".path");
      if (!path) return path.error();
      add(reference_kind(type), *path, relative);
    }
  }
  if (reference_files.size() > kReferencesMax)
    return bad_request("at most 12 references, got " + std::to_string(reference_files.size()) + " files", "reference");
  for (const UploadedFile* f : reference_files) {
    const std::string major = f->content_type.substr(0, f->content_type.find('/'));
    if (major != "image" && major != "video" && major != "audio")
      return bad_request("the reference file '" + f->filename.substr(0, 60) + "' has the content type '" +
                             f->content_type.substr(0, 60) +
                             "': a reference file's type must be image/..., video/... or audio/... "
                             "(curl: -F 'reference=@clip.mp4;type=video/mp4')",
                         "reference");
    add(reference_kind(major), f->path, f->filename);
  }
  if (has("ref_video_audio") &&
      std::none_of(r.references.begin(), r.references.end(), [](const auto& x) { return x.kind == Kind::kVideo; }))
    return bad_request("ref_video_audio applies to video references, and none is given", "ref_video_audio");
  if (has("ref_size")) {
    const std::string size = body["ref_size"].get<std::string>();
    if (size != "2048" && size != "match")
      return bad_request("ref_size must be \"2048\" or \"match\", got \"" + size.substr(0, 20) + "\"", "ref_size");
    r.ref_size = size == "match" ? engine::RefSize::kMatch : engine::RefSize::k2048;
  }

  // LoRAs: picked from those the server offers (lora_catalog.h), in order, each a name (at its offered
  // strength) or {"name", "strength"}; [] runs none; without the field, the --lora set. The engine
  // merges a set anew only when it differs from the one it holds.
  std::vector<engine::LoraSource> chosen;
  if (has("loras")) {
    const std::string usage = "loras is an array of LoRA names or {\"name\": NAME, \"strength\": S} objects";
    for (const Json& v : body["loras"]) {
      const bool named_object = v.is_object() && v.contains("name") && v["name"].is_string();
      if (!v.is_string() && !named_object) return bad_request(usage, "loras");
      const std::string name = v.is_string() ? v.get<std::string>() : v["name"].get<std::string>();
      auto offered = std::find_if(rules.loras.begin(), rules.loras.end(), [&](const OfferedLora& l) { return l.name == name; });
      if (offered == rules.loras.end())
        return bad_request("unknown LoRA '" + name.substr(0, 80) + "': this server offers [" + offered_names(rules.loras) +
                               "] (orochi serve --lora FILE, --lora-dir DIR)",
                           "loras");
      float strength = offered->strength;
      if (named_object) {
        for (const auto& [key, value] : v.items())
          if (key != "name" && key != "strength") return bad_request(usage + ", got the key '" + key.substr(0, 40) + "'", "loras");
        if (v.contains("strength")) {
          const Json& s = v["strength"];
          if (!s.is_number() || !std::isfinite(s.get<double>()) || s.get<double>() < -16 || s.get<double>() > 16)
            return bad_request("the strength of LoRA '" + name + "' must be a number in [-16, 16]", "loras");
          strength = s.get<float>();
        }
      }
      for (const engine::LoraSource& c : chosen)
        if (c.path == offered->path) return bad_request("LoRA '" + name + "' is named twice", "loras");
      chosen.push_back({offered->path, strength});
      out.loras.push_back({{"name", name}, {"strength", strength}});
    }
  } else {
    for (const OfferedLora& l : rules.loras)
      if (l.at_start) {
        chosen.push_back({l.path, l.strength});
        out.loras.push_back({{"name", l.name}, {"strength", l.strength}});
      }
  }
  out.request.loras = std::move(chosen);
  return out;
}

nlohmann::json accepted_request_json(const VideoRequest& asked, const engine::GenerateRequest& planned,
                                     const std::string& workflow, bool prompt_conditions) {
  Json j{{"prompt", asked.prompt},
         {"prompt_conditions", prompt_conditions},
         {"workflow", workflow},
         {"size", std::to_string(planned.width) + "x" + std::to_string(planned.height)},
         {"frames", planned.frames},
         {"seconds", seconds_text(planned.frames)},
         {"steps", planned.steps},
         {"seed", planned.seed},
         {"video_shift", planned.video_shift},
         {"audio_shift", planned.audio_shift},
         {"references", asked.references},
         {"loras", asked.loras}};
  if (!planned.preset.empty()) j["preset"] = planned.preset;
  if (!planned.video_sigmas.empty()) j["sigmas"] = planned.video_sigmas;
  if (!planned.audio_sigmas.empty()) j["audio_sigmas"] = planned.audio_sigmas;
  if (!asked.references.empty()) j["ref_size"] = planned.ref_size == engine::RefSize::kMatch ? "match" : "2048";
  return j;
}

}  // namespace orochi::apps::server
