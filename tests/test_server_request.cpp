// POST /v1/videos's fields (src/apps/server/request_fields.*): the OpenAI / SGLang / vLLM-Omni
// names and ours map onto the engine's request; each field's type and limits are checked (the
// command line's limits); unknown fields, guidance fields and paths outside --media-root are
// refused naming the field; multipart text parts read as JSON values.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "apps/request_limits.h"
#include "apps/server/request_fields.h"
#include "support/temp_dir.h"

namespace orochi::apps::server {
namespace {

using Json = nlohmann::json;
using Kind = engine::ReferenceInput::Kind;

RequestRules rules() {
  RequestRules r;
  r.model_id = "minimax-h3-demo";
  r.prompt_conditions = true;
  return r;
}

ApiResult<VideoRequest> parse(const Json& body, const RequestRules& r = rules(), const std::vector<UploadedFile>& up = {}) {
  return parse_video_request(body, up, r);
}

// The refusal of `body`: its status, field and a piece of its message.
void expect_refused(const Json& body, const std::string& param, const std::string& says, int status = 400,
                    const RequestRules& r = rules(), const std::vector<UploadedFile>& up = {}) {
  ApiResult<VideoRequest> p = parse(body, r, up);
  ASSERT_FALSE(p) << body.dump();
  EXPECT_EQ(p.error().http_status, status) << body.dump();
  EXPECT_EQ(p.error().param, param) << body.dump() << ": " << p.error().message;
  EXPECT_NE(p.error().message.find(says), std::string::npos) << body.dump() << ": " << p.error().message;
}

TEST(ServerRequest, OpenAiFieldsMapOntoTheEngineRequest) {
  ApiResult<VideoRequest> p = parse({{"prompt", "a fox in snow"}, {"model", "minimax-h3-demo"}, {"size", "320x192"},
                                     {"seconds", "4"}});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->prompt, "a fox in snow");
  EXPECT_EQ(p->request.prompt, "a fox in snow");
  EXPECT_EQ(p->request.width, 320);
  EXPECT_EQ(p->request.height, 192);
  EXPECT_EQ(p->request.frames, 107);  // the fewest 17n + 5 frames lasting >= 4 s (96 frames)
  EXPECT_EQ(p->request.steps, 0);     // the engine's default
  EXPECT_TRUE(p->request.references.empty());
  // seconds as an integer (SGLang's), the same.
  ApiResult<VideoRequest> q = parse({{"prompt", "x"}, {"seconds", 4}});
  ASSERT_TRUE(q);
  EXPECT_EQ(q->request.frames, 107);
  // Without a text encoder (the demo) the prompt is recorded, not given to the engine.
  RequestRules demo = rules();
  demo.prompt_conditions = false;
  ApiResult<VideoRequest> d = parse({{"prompt", "x"}}, demo);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->prompt, "x");
  EXPECT_FALSE(d->request.prompt);
}

TEST(ServerRequest, OurFieldsAndTheOtherServersNames) {
  ApiResult<VideoRequest> p = parse({{"prompt", "x"},
                                     {"width", 64},
                                     {"height", 96},
                                     {"frames", 39},
                                     {"steps", 3},
                                     {"seed", 18446744073709551615ull},
                                     {"video_shift", 6.5},
                                     {"audio_shift", 2},
                                     {"sigmas", {1, 0.5, 0}},
                                     {"audio_sigmas", {1.0, 0.25, 0.0}},
                                     {"fps", 24}});
  ASSERT_TRUE(p) << p.error().message;
  const engine::GenerateRequest& r = p->request;
  EXPECT_EQ(r.width, 64);
  EXPECT_EQ(r.height, 96);
  EXPECT_EQ(r.frames, 39);
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.seed, 18446744073709551615ull);
  EXPECT_EQ(r.video_shift, 6.5);
  EXPECT_EQ(r.audio_shift, 2.0);
  EXPECT_EQ(r.video_sigmas, (std::vector<double>{1, 0.5, 0}));
  EXPECT_EQ(r.audio_sigmas, (std::vector<double>{1, 0.25, 0}));
  // num_frames and num_inference_steps (diffusers' count: evaluations + 1).
  ApiResult<VideoRequest> q = parse({{"prompt", "x"}, {"num_frames", 22}, {"num_inference_steps", 9}, {"preset", "turbo8"}});
  ASSERT_TRUE(q);
  EXPECT_EQ(q->request.frames, 22);
  EXPECT_EQ(q->request.steps, 8);
  EXPECT_EQ(q->request.preset, "turbo8");
}

TEST(ServerRequest, TypesLimitsAndUnknownFieldsAreRefusedByName) {
  const Json ok = {{"prompt", "x"}};
  auto with = [&](const std::string& k, const Json& v) {
    Json j = ok;
    j[k] = v;
    return j;
  };
  expect_refused(Json::array(), "", "JSON object");
  expect_refused("text", "", "JSON object");
  expect_refused(Json::object(), "prompt", "required");
  expect_refused({{"prompt", ""}}, "prompt", "empty");
  expect_refused({{"prompt", 5}}, "prompt", "must be a string");
  expect_refused({{"prompt", std::string(70000, 'a')}}, "prompt", "longer than");
  expect_refused(with("colour", "red"), "colour", "unknown field 'colour'");
  expect_refused(with("negative_prompt", "blur"), "negative_prompt", "guidance-distilled");
  expect_refused(with("guidance_scale", 5), "guidance_scale", "guidance-distilled");
  expect_refused(with("n", 2), "n", "one video per request");
  expect_refused(with("model", "sora-2"), "model", "serves the model 'minimax-h3-demo'");
  expect_refused(with("size", "320X192"), "size", "WIDTHxHEIGHT");
  expect_refused(with("size", "320x"), "size", "WIDTHxHEIGHT");
  expect_refused(with("size", "-320x192"), "size", "WIDTHxHEIGHT");
  expect_refused(with("size", "16x192"), "size", "32 to 8192");
  expect_refused(with("size", "99999x192"), "size", "32 to 8192");
  expect_refused(with("size", 320), "size", "must be a string");
  expect_refused({{"prompt", "x"}, {"size", "64x64"}, {"width", 64}, {"height", 64}}, "size", "not both");
  expect_refused(with("width", 64), "height", "go together");
  expect_refused(with("seconds", "4.5"), "seconds", "whole number");
  expect_refused(with("seconds", "0"), "seconds", "1 to");
  expect_refused(with("seconds", 100000), "seconds", "[1, ");
  expect_refused(with("seconds", 4.5), "seconds", "string of digits or an integer");
  expect_refused({{"prompt", "x"}, {"seconds", 4}, {"frames", 107}}, "seconds", "one of seconds, frames");
  expect_refused(with("frames", "124"), "frames", "must be an integer");
  expect_refused(with("frames", 124.0), "frames", "must be an integer");
  expect_refused(with("frames", 1), "frames", "[5, 17005]");
  expect_refused(with("fps", 30), "fps", "24 fps");
  expect_refused(with("steps", 0), "steps", "[1, 1000]");
  expect_refused(with("steps", true), "steps", "must be an integer, got a boolean");
  expect_refused({{"prompt", "x"}, {"steps", 3}, {"num_inference_steps", 4}}, "steps", "not both");
  expect_refused(with("num_inference_steps", 1), "num_inference_steps", "[2, 1001]");
  expect_refused(with("seed", -1), "seed", "0 to 2^64 - 1");
  expect_refused(with("seed", 1e30), "seed", "must be an integer");
  expect_refused(with("seed", "42"), "seed", "must be an integer");
  expect_refused(with("video_shift", 0), "video_shift", "> 0");
  expect_refused(with("audio_shift", -3), "audio_shift", "> 0");
  expect_refused(with("sigmas", {1, "half", 0}), "sigmas", "array of numbers");
  expect_refused(with("sigmas", 1), "sigmas", "must be an array");
  expect_refused(with("ref_video_audio", true), "ref_video_audio", "none is given");
  expect_refused(with("ref_size", "4096"), "ref_size", "\"2048\" or \"match\"");
  expect_refused(with("loras", {"style"}), "loras", "unknown LoRA 'style': this server offers [none]");
}

TEST(ServerRequest, ReferencePathsResolveInsideTheMediaRoot) {
  testing::TempDir dir("server_request_media");
  std::filesystem::create_directories(dir.path / "media");
  for (const char* f : {"first.png", "last.png", "a.png", "clip.mp4", "voice.wav"}) std::ofstream(dir.path / "media" / f) << "x";
  std::ofstream(dir.path / "outside.png") << "x";
  Expected<MediaRoot> media = MediaRoot::open(dir.file("media"));
  ASSERT_TRUE(media);
  RequestRules r = rules();
  r.media = &*media;
  ApiResult<VideoRequest> fl2va = parse({{"prompt", "x"}, {"last_image", "last.png"}, {"image", "first.png"}}, r);
  ASSERT_TRUE(fl2va) << fl2va.error().message;
  ASSERT_EQ(fl2va->request.references.size(), 2u);
  EXPECT_EQ(fl2va->request.references[0].kind, Kind::kFirstFrame);
  EXPECT_EQ(fl2va->request.references[0].path, std::filesystem::canonical(dir.path / "media" / "first.png").string());
  EXPECT_EQ(fl2va->request.references[1].kind, Kind::kLastFrame);
  EXPECT_EQ(fl2va->references[1], (Json{{"type", "last_frame"}, {"name", "last.png"}}));
  ApiResult<VideoRequest> ref2va = parse({{"prompt", "x"},
                                          {"references",
                                           {{{"type", "video"}, {"path", "clip.mp4"}},
                                            {{"type", "image"}, {"path", "a.png"}},
                                            {{"type", "audio"}, {"path", "voice.wav"}}}},
                                          {"ref_video_audio", false},
                                          {"ref_size", "match"}},
                                         r);
  ASSERT_TRUE(ref2va) << ref2va.error().message;
  const auto& refs = ref2va->request.references;
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].kind, Kind::kVideo);
  EXPECT_FALSE(refs[0].video_audio);
  EXPECT_EQ(refs[1].kind, Kind::kImage);
  EXPECT_EQ(refs[2].kind, Kind::kAudio);
  EXPECT_EQ(ref2va->request.ref_size, engine::RefSize::kMatch);
  // 13 references pass this parser: the engine's own check (check_references) refuses them, as the CLI's.
  Json thirteen = Json::array();
  for (int i = 0; i < 13; ++i) thirteen.push_back({{"type", "image"}, {"path", "a.png"}});
  ApiResult<VideoRequest> many = parse({{"prompt", "x"}, {"references", thirteen}}, r);
  ASSERT_TRUE(many);
  EXPECT_EQ(many->request.references.size(), 13u);

  expect_refused({{"prompt", "x"}, {"image", "../outside.png"}}, "image", "'..'", 400, r);
  expect_refused({{"prompt", "x"}, {"image", (dir.path / "outside.png").string()}}, "image", "absolute", 400, r);
  expect_refused({{"prompt", "x"}, {"last_image", "nope.png"}}, "last_image", "no file", 400, r);
  expect_refused({{"prompt", "x"}, {"references", {{{"type", "image"}, {"path", "/etc/passwd"}}}}}, "references[0].path",
                 "absolute", 400, r);
  expect_refused({{"prompt", "x"}, {"references", {{{"type", "gif"}, {"path", "a.png"}}}}}, "references[0]",
                 "image, video or audio", 400, r);
  expect_refused({{"prompt", "x"}, {"references", {{{"type", "image"}, {"path", "a.png"}, {"audio", true}}}}},
                 "references[0]", "unknown field 'audio'", 400, r);
  expect_refused({{"prompt", "x"}, {"references", {"a.png"}}}, "references[0]", "must be an object", 400, r);
  expect_refused({{"prompt", "x"}, {"image", "first.png"}, {"input_reference", "first.png"}}, "input_reference",
                 "give one", 400, r);
  // Without --media-root no path is taken.
  expect_refused({{"prompt", "x"}, {"image", "first.png"}}, "image", "--media-root");
}

TEST(ServerRequest, UploadsAreReferencesInTheOrderSent) {
  const std::vector<UploadedFile> up = {{"input_reference", "face.png", "image/png", "/jobs/j/inputs/input-1.png"},
                                        {"reference", "clip.mp4", "video/mp4", "/jobs/j/inputs/input-2.mp4"},
                                        {"reference", "voice.wav", "audio/wav", "/jobs/j/inputs/input-3.wav"}};
  ApiResult<VideoRequest> p = parse({{"prompt", "x"}}, rules(), up);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->request.references.size(), 3u);
  EXPECT_EQ(p->request.references[0].kind, Kind::kFirstFrame);
  EXPECT_EQ(p->request.references[0].path, "/jobs/j/inputs/input-1.png");
  EXPECT_EQ(p->request.references[1].kind, Kind::kVideo);
  EXPECT_EQ(p->request.references[2].kind, Kind::kAudio);
  EXPECT_EQ(p->references[0]["name"], "face.png");
  expect_refused({{"prompt", "x"}}, "reference", "image/..., video/... or audio/...", 400, rules(),
                 {{"reference", "blob", "application/octet-stream", "/jobs/j/inputs/input-1"}});
  expect_refused({{"prompt", "x"}}, "image", "2 times", 400, rules(),
                 {{"image", "a.png", "image/png", "/p/1.png"}, {"image", "b.png", "image/png", "/p/2.png"}});
  expect_refused({{"prompt", "x"}, {"image", "a.png"}}, "image", "as a path and as a file", 400, rules(),
                 {{"image", "a.png", "image/png", "/p/1.png"}});
  expect_refused({{"prompt", "x"}, {"references", Json::array()}}, "references", "not both", 400, rules(),
                 {{"reference", "a.png", "image/png", "/p/1.png"}});
}

TEST(ServerRequest, LorasPickFromThoseTheServerOffers) {
  RequestRules r = rules();
  r.loras = {{"style", "/l/style.safetensors", 0.8f, true}, {"motion", "/d/motion.safetensors", 1.0f, false}};
  // Names in the request's order, at their offered strength or the one given.
  ApiResult<VideoRequest> p = parse({{"prompt", "x"}, {"loras", {"motion", {{"name", "style"}, {"strength", 0.25}}}}}, r);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_TRUE(p->request.loras.has_value());
  ASSERT_EQ(p->request.loras->size(), 2u);
  EXPECT_EQ((*p->request.loras)[0].path, "/d/motion.safetensors");
  EXPECT_EQ((*p->request.loras)[0].strength, 1.0f);
  EXPECT_EQ((*p->request.loras)[1].path, "/l/style.safetensors");
  EXPECT_EQ((*p->request.loras)[1].strength, 0.25f);
  EXPECT_EQ(p->loras, (std::vector<Json>{{{"name", "motion"}, {"strength", 1.0}}, {{"name", "style"}, {"strength", 0.25}}}));
  // Without the field: the --lora set; [] runs none.
  ApiResult<VideoRequest> d = parse({{"prompt", "x"}}, r);
  ASSERT_TRUE(d && d->request.loras && d->request.loras->size() == 1u);
  EXPECT_EQ((*d->request.loras)[0].path, "/l/style.safetensors");
  EXPECT_EQ((*d->request.loras)[0].strength, 0.8f);
  ApiResult<VideoRequest> none = parse({{"prompt", "x"}, {"loras", Json::array()}}, r);
  ASSERT_TRUE(none && none->request.loras && none->request.loras->empty());
  expect_refused({{"prompt", "x"}, {"loras", {"style", "other"}}}, "loras",
                 "unknown LoRA 'other': this server offers [style, motion]", 400, r);
  expect_refused({{"prompt", "x"}, {"loras", {"style", "style"}}}, "loras", "named twice", 400, r);
  expect_refused({{"prompt", "x"}, {"loras", {{{"name", "style"}, {"strength", 40}}}}}, "loras", "[-16, 16]", 400, r);
  expect_refused({{"prompt", "x"}, {"loras", {{{"name", "style"}, {"scale", 1}}}}}, "loras", "the key 'scale'", 400, r);
  expect_refused({{"prompt", "x"}, {"loras", {1}}}, "loras", "array of LoRA names or", 400, r);
}

TEST(ServerRequest, TheOfferedLorasAreTheStartOnesThenTheFolders) {
  testing::TempDir dir("server_loras");
  std::filesystem::create_directories(dir.path / "loras");
  for (const char* f : {"b.safetensors", "a.safetensors", "notes.txt"}) std::ofstream(dir.path / "loras" / f) << "x";
  Expected<std::vector<OfferedLora>> o = offered_loras({{dir.file("own.safetensors"), 0.5f}}, (dir.path / "loras").string());
  ASSERT_TRUE(o.has_value()) << o.status().to_string();
  ASSERT_EQ(o->size(), 3u);
  EXPECT_EQ(offered_names(*o), "own, a, b");
  EXPECT_TRUE((*o)[0].at_start);
  EXPECT_EQ((*o)[0].strength, 0.5f);
  EXPECT_FALSE((*o)[1].at_start);
  // A --lora file inside the folder is offered once, at its --lora strength; two files of one name are refused.
  Expected<std::vector<OfferedLora>> inside = offered_loras({{(dir.path / "loras" / "a.safetensors").string(), 2.0f}},
                                                           (dir.path / "loras").string());
  ASSERT_TRUE(inside.has_value()) << inside.status().to_string();
  EXPECT_EQ(offered_names(*inside), "a, b");
  Expected<std::vector<OfferedLora>> twice = offered_loras({{dir.file("a.safetensors"), 1.0f}}, (dir.path / "loras").string());
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.status().message().find("two LoRAs are named 'a'"), std::string::npos) << twice.status().message();
  EXPECT_FALSE(offered_loras({}, dir.file("missing")).has_value());
}

TEST(ServerRequest, MultipartTextPartsReadAsJsonValues) {
  EXPECT_EQ(*multipart_field_value("prompt", "8"), Json("8"));  // a string field keeps its text
  EXPECT_EQ(*multipart_field_value("seconds", "4"), Json("4"));
  EXPECT_EQ(*multipart_field_value("steps", "8"), Json(8));
  EXPECT_EQ(*multipart_field_value("ref_video_audio", "false"), Json(false));
  EXPECT_EQ(*multipart_field_value("sigmas", "[1, 0.5, 0]"), Json({1, 0.5, 0}));
  EXPECT_EQ(*multipart_field_value("unknown_thing", "{"), Json("{"));  // refused later, by name
  ApiResult<Json> bad = multipart_field_value("steps", "eight");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().param, "steps");
  ApiResult<Json> not_utf8 = multipart_field_value("prompt", std::string("caf\xe9", 4));
  ASSERT_FALSE(not_utf8);
  EXPECT_NE(not_utf8.error().message.find("UTF-8"), std::string::npos);
}

TEST(ServerRequest, SecondsFramesAndUtf8) {
  EXPECT_EQ(frames_for_seconds(1), 39);
  EXPECT_EQ(frames_for_seconds(5), 124);
  EXPECT_EQ(frames_for_seconds(4), 107);
  EXPECT_EQ(frames_for_seconds(12), 294);
  for (int64_t s = 1; s <= 700; ++s) {
    const int64_t f = frames_for_seconds(s);
    EXPECT_EQ((f - 5) % 17, 0) << s;
    EXPECT_GE(f, 24 * s) << s;
    EXPECT_LT(f - 17, 24 * s) << s;
    EXPECT_LE(f, limits::kFramesMax);
  }
  EXPECT_EQ(seconds_text(124), "5.17");
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\xa6\x8a"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // cut short
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xff"));
}

TEST(ServerRequest, TheAcceptedRequestShowsTheResolvedValues) {
  ApiResult<VideoRequest> p = parse({{"prompt", "x"}, {"seconds", "4"}});
  ASSERT_TRUE(p);
  engine::GenerateRequest planned = p->request;
  planned.width = 320;
  planned.height = 192;
  planned.steps = 8;
  planned.video_shift = 12;
  planned.audio_shift = 3;
  const Json j = accepted_request_json(*p, planned, "t2va", false);
  EXPECT_EQ(j["size"], "320x192");
  EXPECT_EQ(j["frames"], 107);
  EXPECT_EQ(j["seconds"], "4.46");
  EXPECT_EQ(j["steps"], 8);
  EXPECT_EQ(j["workflow"], "t2va");
  EXPECT_EQ(j["prompt_conditions"], false);
  EXPECT_FALSE(j.contains("preset"));
}

}  // namespace
}  // namespace orochi::apps::server
