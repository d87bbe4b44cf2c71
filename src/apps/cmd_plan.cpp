// `orochi plan`: the memory plan of a request on the given GPUs, from the configs alone (no weight
// is loaded): pools per phase and GPU, weight tiers, a fits / does-not-fit summary with fixes, the
// equivalent single-GPU capacity of 1..N GPUs, and --json. Exit 0 when it fits, 1 when it does not
// (or on bad input), 2 on usage errors.
#include <cstdio>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/engine_options_cli.h"
#include "apps/generate_options.h"
#include "apps/plan_references.h"
#include "apps/reference_options.h"
#include "apps/request_limits.h"
#include "engine/gpu_capability.h"
#include "pipeline/sampling.h"
#include "planner/parallel_choice.h"
#include "planner/plan_memory.h"
#include "planner/plan_report.h"

namespace orochi::apps {
namespace {

Expected<planner::TierPolicy> parse_tiers(const std::string& text, int64_t slots) {
  planner::TierPolicy p;
  p.peer = p.host = false;
  std::stringstream in(text);
  std::string word;
  bool resident = false;
  while (std::getline(in, word, ',')) {
    if (word == "resident") resident = true;
    else if (word == "peer") p.peer = true;
    else if (word == "host") p.host = true;
    else return invalid_argument("--tiers takes a comma list of resident, peer, host; got '" + word + "'");
  }
  if (!resident) return invalid_argument("--tiers must include resident (the computing GPU), got '" + text + "'");
  if (slots < 1 || slots > 8) return invalid_argument("--staging-slots must be in [1, 8], got " + std::to_string(slots));
  p.staging_slots = static_cast<int>(slots);
  return p;
}

Expected<planner::PlanInput> parse_input(const Args& args, pipeline::Sampling& sampling) {
  planner::PlanInput in;
  OROCHI_ASSIGN_OR_RETURN(in.models, planner::load_model_configs(args.get("model", "h3")));
  OROCHI_ASSIGN_OR_RETURN(in.request, planner::request_for_resolution(args.get("res", "768p")));
  OROCHI_ASSIGN_OR_RETURN(in.request.frames, args.get_int("frames", 124, limits::kFramesMin, limits::kFramesMax));
  // The schedule as generate takes it (--preset, --sigmas, ...); plan's step count defaults to 8.
  OROCHI_ASSIGN_OR_RETURN(const pipeline::Sampling asked, parse_sampling_options(args, 8));
  OROCHI_ASSIGN_OR_RETURN(sampling, pipeline::resolve_sampling(asked, 8));
  in.request.steps = sampling.steps;
  in.request.video_shift = sampling.video_shift;
  in.request.audio_shift = sampling.audio_shift;
  in.request.video_sigmas = sampling.video_sigmas;
  in.request.audio_sigmas = sampling.audio_sigmas;
  OROCHI_ASSIGN_OR_RETURN(in.request.text_rows,
                          args.get_int("text-rows", 256, limits::kTextRowsMin, limits::kTextRowsMax));
  OROCHI_ASSIGN_OR_RETURN(const int64_t gpus, args.get_int("gpus", 1, limits::kGpusMin, limits::kGpusMax));
  if (gpus < 1 || gpus > 64) return invalid_argument("--gpus must be in [1, 64], got " + std::to_string(gpus));
  in.gpus.count = static_cast<int>(gpus);
  OROCHI_ASSIGN_OR_RETURN(const double vram, args.get_double("vram-per-gpu", 139.0));
  if (!(vram > 0) || vram > 1e6)
    return invalid_argument("--vram-per-gpu must be a positive number of GiB (e.g. 24 or 139), got " +
                            args.get("vram-per-gpu", ""));
  in.gpus.vram_bytes = planner::from_gib(vram);
  const std::string link = args.get("link", "nvlink");
  if (link != "nvlink" && link != "pcie")
    return invalid_argument("--link must be nvlink or pcie, got '" + link + "'");
  OROCHI_ASSIGN_OR_RETURN(in.gpus.peer_gbps, args.get_double("peer-gbps", link == "nvlink" ? 300.0 : 25.0));
  OROCHI_ASSIGN_OR_RETURN(in.gpus.host_gbps, args.get_double("host-gbps", 25.0));
  OROCHI_ASSIGN_OR_RETURN(in.gpus.tflops, args.get_double("tflops", 580.0));
  if (!(in.gpus.peer_gbps > 0) || !(in.gpus.host_gbps > 0) || !(in.gpus.tflops > 0))
    return invalid_argument("--peer-gbps, --host-gbps and --tflops must be positive");
  const std::string parallel = args.get("parallel", planner::kDefaultParallel);
  if (parallel != "auto") {
    OROCHI_ASSIGN_OR_RETURN(in.layout, planner::parse_parallel_layout(parallel));
  }
  OROCHI_ASSIGN_OR_RETURN(const int64_t slots, args.get_int("staging-slots", 2));
  OROCHI_ASSIGN_OR_RETURN(in.tiers, parse_tiers(args.get("tiers", "resident,peer,host"), slots));
  // The run switches that change memory (the SP scheme's buffers, weighted SP rows), as a run takes them.
  const EngineCli cli{"", gpus, "auto", 60, args.get("set", ""), true, "orochi plan"};
  OROCHI_ASSIGN_OR_RETURN(const engine::EngineOptions options, engine_options_from(cli));
  in.sp = options.switches.sp;
  in.conditioner_precision = options.switches.conditioner_precision;  // the text-encoder phase's linears
  // --precision: the weight and activation bytes of the denoiser's linears (what generate will take).
  Expected<Precision> precision = parse_precision(args.get("precision", "bf16"));
  if (!precision) return usage_error(precision.status().message());
  in.precision = *precision;
  // FP8 attention as generate would take it on the GPUs the plan assumes (H200-class: Hopper, FP8),
  // refused where generate refuses it (several GPUs).
  OROCHI_ASSIGN_OR_RETURN(const engine::RunSwitches resolved,
                          engine::switches_for_gpu(options.switches, in.precision, {9, 0}, "the planned GPU (Hopper)"));
  OROCHI_RETURN_IF_ERROR(engine::check_attention_precision(resolved, in.precision, true, static_cast<int>(gpus)));
  in.fp8_attention = resolved.kernels.fp8_attention(in.precision);
  return in;
}

}  // namespace

int run_plan(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"model", "res", "frames", "text-rows", "gpus", "vram-per-gpu", "parallel",
                                  "tiers", "staging-slots", "link", "peer-gbps", "host-gbps", "tflops", "set",
                                  "precision"};
  std::set<std::string> repeatable;
  add_reference_options(valued, repeatable);
  add_sampling_options(valued);
  Expected<Args> args = Args::parse(argv, valued, {"json"}, repeatable);
  if (!args) return fail(args.status());
  if (!args->positionals().empty())
    return fail(usage_error("plan takes no positional argument, got '" + args->positionals()[0] + "'"));
  pipeline::Sampling sampling;
  Expected<planner::PlanInput> input = parse_input(*args, sampling);
  if (!input) return fail(input.status());
  if (!args->has("json")) std::printf("schedule: %s\n", pipeline::describe_sampling(sampling).c_str());
  // fl2va / ref2va: the references from their headers, their rows and the conditioner's L.
  Expected<PlannedReferences> refs = plan_references(*args, *input);
  if (!refs) return fail(refs.status());
  if (!args->has("json")) std::fputs(references_text(*refs).c_str(), stdout);
  // --parallel auto: the layout generate would take for --gpus N (planner/parallel_choice.h).
  Expected<planner::MemoryPlan> plan = unsupported("no plan");
  if (args->get("parallel", planner::kDefaultParallel) == "auto") {
    Expected<planner::LayoutPlan> laid_out = planner::plan_for_gpus(*input, "auto");
    if (!laid_out) return fail(laid_out.status());
    if (!args->has("json")) std::printf("layout: %s (%s)\n", laid_out->plan.input.layout.name().c_str(),
                                        laid_out->degrees.why.c_str());
    plan = std::move(laid_out->plan);
  } else {
    plan = planner::plan_memory(*input);
  }
  if (!plan) return fail(plan.status());
  // ref2va: what the other --ref-size would cost, on the same layout.
  Expected<RefSizeAlternative> other = other_ref_size(*args, plan->input, *refs);
  if (!other) return fail(other.status());
  if (args->has("json")) {
    nlohmann::json j = planner::plan_json(*plan);
    if (refs->workflow != "t2va") j["references"] = references_json(*refs);
    if (!other->line.empty()) j["ref_size_alternative"] = other->json;
    j["sampling"] = {{"preset", sampling.preset.empty() ? nlohmann::json() : nlohmann::json(sampling.preset)},
                     {"steps", sampling.steps},
                     {"video_sigmas", plan->shape.t2va.video_schedule.sigmas},
                     {"audio_sigmas", plan->shape.t2va.audio_schedule.sigmas}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::fputs(planner::plan_text(*plan).c_str(), stdout);
    if (!other->line.empty()) std::printf("%s\n", other->line.c_str());
  }
  return plan->fits ? 0 : 1;
}

}  // namespace orochi::apps
