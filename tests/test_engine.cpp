// The engine floor on the CPU: two requests on one engine (the second loads nothing), the plan is
// made once and echoed by the report, and the options and devices are checked before any model is
// built.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "engine/engine.h"
#include "engine/model_family.h"
#include "engine/run_switches.h"
#include "models/h3/transformer.h"
#include "models/h3/weights.h"
#include "pipeline/random_inputs.h"
#include "pipeline/t2va.h"
#include "support/demo_request.h"
#include "support/paths.h"

namespace orochi::engine {
namespace {

TEST(Engine, TwoRequestsOnOneEngineLoadOnce) {
  Expected<std::unique_ptr<Engine>> engine = Engine::open(ModelSource{}, EngineOptions{});
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  EXPECT_TRUE((*engine)->demo());
  EXPECT_EQ((*engine)->device(), "cpu");

  Expected<RunPlan> plan = (*engine)->plan(testing::short_demo_request(7));
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_EQ(plan->shape.text_rows, 8);
  EXPECT_EQ(plan->shape.t2va.geometry.frames, 22);
  EXPECT_FALSE(plan->memory.has_value());  // the CPU needs no GPU plan

  Expected<RunResult> first = (*engine)->run(*plan);
  ASSERT_TRUE(first.has_value()) << first.status().to_string();
  Expected<RunResult> second = (*engine)->run(*plan);
  ASSERT_TRUE(second.has_value()) << second.status().to_string();
  EXPECT_EQ(first->report.request_index, 1);
  EXPECT_EQ(second->report.request_index, 2);
  EXPECT_GT(first->report.load_s, 0.0);   // the demo's weights, made by open()
  EXPECT_EQ(second->report.load_s, 0.0);  // nothing read or made again
  // The same plan and seed give the same video and sound, request after request.
  ASSERT_EQ(first->result.frames.numel(), second->result.frames.numel());
  EXPECT_EQ(0, std::memcmp(first->result.frames.raw_data(), second->result.frames.raw_data(), first->result.frames.nbytes()));
  EXPECT_EQ(0, std::memcmp(first->result.waveform.raw_data(), second->result.waveform.raw_data(),
                           first->result.waveform.nbytes()));
  // The report echoes the plan and the switches.
  const nlohmann::json j = report_json(second->report);
  EXPECT_EQ(j["request_index"], 2);
  EXPECT_EQ(j["plan"]["packed_rows"], plan->shape.rows);
  EXPECT_EQ(j["switches"]["attention"], "flash");
}

TEST(Engine, PlanFillsDefaultsAndRefusesBadRequests) {
  Expected<std::unique_ptr<Engine>> engine = Engine::open(ModelSource{}, EngineOptions{});
  ASSERT_TRUE(engine.has_value());
  Expected<RunPlan> defaults = (*engine)->plan(GenerateRequest{});
  ASSERT_TRUE(defaults.has_value()) << defaults.status().to_string();
  EXPECT_EQ(defaults->request.width, 320);
  EXPECT_EQ(defaults->request.height, 192);
  EXPECT_EQ(defaults->request.steps, 8);
  EXPECT_EQ(defaults->shape.text_rows, 32);

  GenerateRequest prompt = testing::short_demo_request(1);
  prompt.prompt = "a cat";
  Expected<RunPlan> refused = (*engine)->plan(prompt);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("demo model has no text encoder"), std::string::npos);

  // A CPU request that would take hours is refused by the plan with its estimate.
  GenerateRequest huge = testing::short_demo_request(1);
  huge.width = huge.height = 8192;
  huge.frames = 124;
  huge.steps = 8;
  Expected<RunPlan> hours = (*engine)->plan(huge);
  ASSERT_FALSE(hours.has_value());
  EXPECT_NE(hours.status().message().find("hours"), std::string::npos) << hours.status().message();
  EXPECT_NE(hours.status().message().find("--device cuda"), std::string::npos) << hours.status().message();
  // One that takes long but fits says so before it starts (and shows progress from step 0).
  GenerateRequest long_text = testing::short_demo_request(1);
  long_text.text_rows = 65536;
  long_text.width = 1024;
  long_text.height = 1024;
  long_text.frames = 124;
  Expected<RunPlan> long_plan = (*engine)->plan(long_text);
  ASSERT_TRUE(long_plan.has_value()) << long_plan.status().to_string();
  ASSERT_FALSE(long_plan->notes.empty());
  EXPECT_NE(long_plan->notes.back().find("minutes"), std::string::npos) << long_plan->notes.back();

  GenerateRequest odd = testing::short_demo_request(1);
  odd.width = 100;  // not a multiple of 32
  Expected<RunPlan> bad = (*engine)->plan(odd);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("32"), std::string::npos) << bad.status().message();
}

TEST(Engine, OpenChecksOptionsAndDevicesBeforeAnyModel) {
  EngineOptions gpus_on_cpu;
  gpus_on_cpu.gpus = 2;
  Expected<std::unique_ptr<Engine>> a = Engine::open(ModelSource{}, gpus_on_cpu);
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.status().message().find("needs --device cuda"), std::string::npos);

  EngineOptions bad_layout;
  bad_layout.parallel = "tpxsp";  // the old vocabulary
  Expected<std::unique_ptr<Engine>> b = Engine::open(ModelSource{}, bad_layout);
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.status().message().find("auto, none, tpN"), std::string::npos) << b.status().message();

  EngineOptions bad_device;
  bad_device.device = "gpu0";
  EXPECT_FALSE(Engine::open(ModelSource{}, bad_device).has_value());

  if (gpu_backend().device_count() == 0) {  // CI: no GPU (or no CUDA backend at all)
    EngineOptions cuda;
    cuda.device = "cuda";
    Expected<std::unique_ptr<Engine>> c = Engine::open(ModelSource{}, cuda);
    ASSERT_FALSE(c.has_value());
    const std::string m = c.status().message();
    EXPECT_TRUE(m.find("no CUDA GPU visible; use --device cpu") != std::string::npos ||
                m.find("no CUDA backend") != std::string::npos)
        << m;
    ModelSource random;
    random.random_weights = true;
    Expected<std::unique_ptr<Engine>> d = Engine::open(random, EngineOptions{});
    ASSERT_FALSE(d.has_value());
    EXPECT_NE(d.status().message().find("needs a GPU"), std::string::npos) << d.status().message();
  }
}

// `orochi forward` through the engine: a transformer folder alone opens on the CPU, the forward
// goes through the family-neutral denoiser interface and gives h3::forward's bits on the same
// inputs, and such an engine refuses a generation (it has no decoders).
TEST(Engine, ForwardOnATransformerFolderIsTheReferenceForward) {
  const std::string dir = testing::test_data_dir() + "/h3_tiny/transformer";
  ModelSource source;
  source.transformer_dir = dir;
  EngineOptions options;
  options.device = "cpu";
  Expected<std::unique_ptr<Engine>> engine = Engine::open(source, options);
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  ForwardRequest request;
  request.width = 64;
  request.height = 64;
  request.frames = 5;
  request.text_rows = 6;
  request.seed = 3;
  Expected<ForwardResult> out = (*engine)->forward(request);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_GT(out->load_s, 0.0);

  Expected<h3::H3Weights> w = h3::load_weights(dir);
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  pipeline::T2vaShape shape;
  shape.width = 64;
  shape.height = 64;
  shape.frames = 5;
  shape.steps = 1;
  shape.text_rows = 6;
  Expected<pipeline::T2vaPlan> t2va = pipeline::plan_t2va(w->config, shape);
  ASSERT_TRUE(t2va.has_value()) << t2va.status().to_string();
  const pipeline::PackedLayout* layout = &t2va->layout;
  const pipeline::RowTimesteps ts = pipeline::assign_row_timesteps(*layout, 0.3f, 0.4f);
  const h3::H3Inputs in = pipeline::random_h3_inputs(w->config, *layout, ts, 3);
  Expected<h3::H3Outputs> want = h3::forward(*w, in, h3::compute_modulation_tables(*w, ts.timesteps));
  ASSERT_TRUE(want.has_value()) << want.status().to_string();
  ASSERT_EQ(out->video.shape(), want->video.shape());
  ASSERT_EQ(out->audio.shape(), want->audio.shape());
  EXPECT_EQ(0, std::memcmp(out->video.raw_data(), want->video.raw_data(), want->video.nbytes()));
  EXPECT_EQ(0, std::memcmp(out->audio.raw_data(), want->audio.raw_data(), want->audio.nbytes()));

  // Bad requests are refused by the checks a client runs before opening.
  request.frames = 100;
  EXPECT_EQ(Engine::check_forward(request).code(), ErrorCode::kInvalidArgument);
  request.frames = 5;
  request.t_video = 1.5;
  EXPECT_FALSE(Engine::check_forward(request).is_ok());

  Expected<RunPlan> plan = (*engine)->plan(testing::short_demo_request(1));
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.status().message().find("transformer folder alone"), std::string::npos) << plan.status().message();
  ModelSource both;
  both.transformer_dir = dir;
  both.dir = testing::test_data_dir() + "/h3_tiny";
  EXPECT_FALSE(Engine::open(both, options).has_value());
}

TEST(ModelFamily, DetectsH3AndNamesItsWorkflows) {
  Expected<const ModelFamily*> h3 = detect_family(testing::test_data_dir() + "/h3_tiny");
  ASSERT_TRUE(h3.has_value()) << h3.status().to_string();
  EXPECT_EQ((*h3)->name(), "MiniMax-H3");
  EXPECT_EQ((*h3)->phases(), (std::vector<std::string>{"text encoder", "denoiser", "decode"}));
  for (const char* workflow : {"t2va", "fl2va", "ref2va"}) EXPECT_TRUE(check_workflow(**h3, workflow).is_ok()) << workflow;
  EXPECT_EQ(check_workflow(**h3, "i2v").code(), ErrorCode::kInvalidArgument);
  // A folder of another model, and no folder at all, say what they are.
  Expected<const ModelFamily*> other = detect_family(testing::test_data_dir() + "/qwen3vl_text");
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(other.status().message().find("MiniMax-H3"), std::string::npos) << other.status().message();
  EXPECT_EQ(detect_family("/nonexistent/model").status().code(), ErrorCode::kNotFound);
}

TEST(RunSwitches, TableParsingEnvironmentAndReport) {
  RunSwitches s;
  ASSERT_TRUE(set_run_switches(s, "flash-kv-block=176,sp-weights=1,0.8,attention=cudnn").is_ok());
  EXPECT_EQ(s.kernels.flash_kv_block, 176);
  EXPECT_FALSE(s.kernels.flash_attention);
  EXPECT_EQ(s.sp.row_weights, (std::vector<double>{1, 0.8}));
  EXPECT_TRUE(s.kernels.fused_quantization);  // the producers quantize unless asked otherwise
  ASSERT_TRUE(set_run_switch(s, "fused-quant=off").is_ok());
  EXPECT_FALSE(s.kernels.fused_quantization);
  EXPECT_EQ(run_switches_json(s)["fused-quant"], "off");
  Status unknown = set_run_switch(s, "flash-kv-blok", "176");
  EXPECT_EQ(unknown.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("flash-kv-block"), std::string::npos) << unknown.message();  // lists the names
  Status value = set_run_switch(s, "gemm", "fast");
  EXPECT_NE(value.message().find("cublas or sm90a"), std::string::npos) << value.message();
  for (const char* bad : {"1,", ",1", "1,abc", "1,0", "1,-1", "1,inf"})
    EXPECT_FALSE(set_run_switch(s, "sp-weights", bad).is_ok()) << bad;
  ASSERT_TRUE(set_run_switch(s, "peer-pace", "32:150").is_ok());
  EXPECT_EQ(s.sp.pace.piece_bytes, size_t{32} << 20);
  EXPECT_EQ(s.sp.pace.gap_us, 150);
  for (const char* bad : {"32", "x:1", "0:5", "32:-1", "32:", "32:5x", ":5", "5000:1", "32:20000"})
    EXPECT_FALSE(set_run_switch(s, "peer-pace", bad).is_ok()) << bad;

  setenv("OROCHI_FLASH_RESCALE", "eager", 1);
  Expected<RunSwitches> env = run_switches_from_environment();
  ASSERT_TRUE(env.has_value()) << env.status().to_string();
  EXPECT_FALSE(env->kernels.flash_lazy_rescale);
  EXPECT_EQ(run_switches_json(*env)["flash-rescale"], "eager");
  setenv("OROCHI_FLASH_RESCALE", "fast", 1);
  Expected<RunSwitches> bad_value = run_switches_from_environment();
  ASSERT_FALSE(bad_value.has_value());
  EXPECT_NE(bad_value.status().message().find("OROCHI_FLASH_RESCALE"), std::string::npos);
  unsetenv("OROCHI_FLASH_RESCALE");
  setenv("OROCHI_FLASH_KV_BLCK", "176", 1);  // a typo never passes silently
  Expected<RunSwitches> typo = run_switches_from_environment();
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.status().message().find("OROCHI_FLASH_KV_BLCK"), std::string::npos);
  unsetenv("OROCHI_FLASH_KV_BLCK");
}

}  // namespace
}  // namespace orochi::engine
