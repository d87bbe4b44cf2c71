#include "apps/plan_references.h"

#include <filesystem>
#include <initializer_list>

#include "apps/reference_options.h"
#include "core/format.h"
#include "models/qwen3vl/vision_grid.h"
#include "engine/reference_inputs.h"
#include "planner/plan_report.h"
#include "models/h3/model_folder_parts.h"
#include "text/tokenizer.h"

namespace orochi::apps {
namespace {

const char* ref_size_name(engine::RefSize s) { return s == engine::RefSize::kMatch ? "match" : "2048"; }

// Label and timestamp tokens: counted by the model's own tokenizer when --model has one, else
// estimated (REF2VA.md §6: about 6 each).
pipeline::SegmentTokenCount segment_counter(const Args& args, bool& counted) {
  counted = false;
  const std::string model = args.get("model", "h3");
  if (model == "h3") return pipeline::estimated_segment_tokens();
  Expected<h3::FolderParts> parts = h3::model_folder_parts(model);  // either layout
  if (!parts) return pipeline::estimated_segment_tokens();
  const std::string tokenizer_file = parts->tokenizer + "/tokenizer.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(tokenizer_file, ec)) return pipeline::estimated_segment_tokens();
  Expected<text::BpeTokenizer> tokenizer = text::BpeTokenizer::load(tokenizer_file);
  if (!tokenizer) return pipeline::estimated_segment_tokens();
  counted = true;
  return [t = std::make_shared<text::BpeTokenizer>(std::move(tokenizer).value())](
             const std::string& segment) -> Expected<int64_t> {
    OROCHI_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, t->encode(segment));
    return static_cast<int64_t>(ids.size());
  };
}

// "1344x768", "32x48x84".
std::string dims(std::initializer_list<int64_t> sides) {
  std::string out;
  for (const int64_t v : sides) out += (out.empty() ? "" : "x") + std::to_string(v);
  return out;
}

int64_t vision_tokens(const PlannedReferences& refs, const pipeline::VisionGrid& g) {
  return qwen3vl::token_count(g, refs.merge_size);
}

// A reference's rows in the packed sequence: its frames' (patchified) and its sound's (2 channels).
int64_t visual_rows(const PlannedReferences& refs, const pipeline::ReferenceGeometry& g) {
  if (g.kind == pipeline::ReferenceKind::kAudio) return 0;
  return g.latent_frames * (g.latent_height / refs.patch_h) * (g.latent_width / refs.patch_w);
}

}  // namespace

Expected<PlannedReferences> plan_references(const Args& args, planner::PlanInput& input,
                                            std::optional<engine::RefSize> ref_size) {
  OROCHI_ASSIGN_OR_RETURN(const ReferenceOptions options, parse_reference_options(args));
  PlannedReferences out;
  if (options.references.empty()) return out;
  out.ref_size = ref_size.value_or(options.ref_size);
  out.patch_h = input.models.transformer.patch_size[1];
  out.patch_w = input.models.transformer.patch_size[2];
  out.merge_size = input.models.vision.spatial_merge_size;
  engine::GenerateRequest request;
  request.width = input.request.width;
  request.height = input.request.height;
  request.frames = input.request.frames;
  request.references = options.references;
  request.ref_size = out.ref_size;
  OROCHI_ASSIGN_OR_RETURN(const engine::ReferenceCheck checked, engine::check_references(request));
  out.workflow = checked.workflow;
  out.checked = checked.references;
  const pipeline::SegmentTokenCount count = segment_counter(args, out.labels_counted);
  const int64_t prompt_tokens = input.request.text_rows;
  if (checked.workflow == "fl2va") {
    input.request.keyframes = engine::keyframe_anchors(request);
    if (!args.has("res") && checked.keyframe_canvas) {  // generate's canvas rule
      input.request.width = checked.keyframe_canvas->width;
      input.request.height = checked.keyframe_canvas->height;
    }
    for (size_t i = 0; i < input.request.keyframes.size(); ++i) {
      OROCHI_ASSIGN_OR_RETURN(const pipeline::VisionGrid grid,
                              engine::keyframe_vision_grid(input.request.width, input.request.height));
      out.keyframe_grids.push_back(grid);
    }
    OROCHI_ASSIGN_OR_RETURN(out.presentation, pipeline::fl2va_presentation_size(out.keyframe_grids, prompt_tokens, count));
  } else {
    OROCHI_ASSIGN_OR_RETURN(out.references,
                            engine::plan_references_from_headers(checked, request,
                                                                 engine::reference_rules(out.ref_size, false)));
    input.request.references = engine::reference_geometry(out.references);
    OROCHI_ASSIGN_OR_RETURN(out.presentation,
                            pipeline::ref2va_presentation_size(engine::presentation_references(out.references),
                                                               prompt_tokens, count));
  }
  input.request.text_rows = out.presentation.rows;
  input.request.vision_patches = out.presentation.vision_patches;
  return out;
}

std::string references_text(const PlannedReferences& refs) {
  if (refs.workflow == "t2va") return "";
  std::string out = refs.workflow + " references, in request order:\n";
  for (const engine::CheckedReference& c : refs.checked) out += "  " + engine::describe_reference(c) + "\n";
  if (!refs.references.empty()) {
    out += format_printf("as encoded (--ref-size %s; * = a length from the file's header, shorter than the target):\n",
                         ref_size_name(refs.ref_size));
    out += "   #  reference      encode size          latents (T x h x w)   DiT rows            vision tokens\n";
    for (size_t i = 0; i < refs.references.size(); ++i) {
      const engine::PlannedReference& r = refs.references[i];
      const pipeline::ReferenceGeometry& g = r.geometry;
      const int64_t visual = visual_rows(refs, g), audio = 2 * g.audio_latents;
      std::string size, latents, rows, vision = "-";
      const char* mark = r.length_from_header ? "*" : "";
      switch (g.kind) {
        case pipeline::ReferenceKind::kImage:
          size = dims({r.width, r.height});
          latents = dims({1, g.latent_height, g.latent_width});
          rows = format_grouped(visual);
          break;
        case pipeline::ReferenceKind::kVideo:
          size = dims({r.width, r.height}) + ", " + std::to_string(r.vae_frames) + mark + " f";
          latents = dims({g.latent_frames, g.latent_height, g.latent_width});
          rows = format_grouped(visual) + (audio > 0 ? " + " + format_grouped(audio) + " sound" : "");
          break;
        case pipeline::ReferenceKind::kAudio:
          size = format_printf("%.2f s%s", static_cast<double>(r.audio_samples) / 32000.0, mark);
          latents = "2x" + std::to_string(g.audio_latents) + " audio";
          rows = format_grouped(audio);
          break;
      }
      if (g.kind != pipeline::ReferenceKind::kAudio)
        vision = format_grouped(vision_tokens(refs, r.vision.grid)) +
                 (g.kind == pipeline::ReferenceKind::kVideo
                      ? " (" + std::to_string(r.vision.grid.t) + " blocks)"
                      : std::string());
      out += format_printf("  %2zu  %-13s  %-19s  %-20s  %-18s  %s\n", i + 1,
                           engine::reference_flag(r.checked.input.kind), size.c_str(), latents.c_str(), rows.c_str(),
                           vision.c_str());
    }
  }
  const pipeline::PresentationSize& p = refs.presentation;
  out += format_printf("conditioner: L = %s rows = prompt %s (--text-rows) + vision %s (%s patches) + labels %s (%s)\n",
                       format_grouped(p.rows).c_str(), format_grouped(p.prompt_rows).c_str(),
                       format_grouped(p.rows - p.prompt_rows - p.label_rows).c_str(),
                       format_grouped(p.vision_patches).c_str(), format_grouped(p.label_rows).c_str(),
                       refs.labels_counted ? "counted by the model's tokenizer"
                                           : ("estimated at " + std::to_string(pipeline::kEstimatedSegmentTokens) +
                                              " tokens a segment").c_str());
  return out;
}

nlohmann::json references_json(const PlannedReferences& refs) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < refs.checked.size(); ++i) {
    const engine::CheckedReference& c = refs.checked[i];
    nlohmann::json j{{"flag", engine::reference_flag(c.input.kind)}, {"path", c.input.path}};
    if (i < refs.references.size()) {
      const engine::PlannedReference& r = refs.references[i];
      const pipeline::ReferenceGeometry& g = r.geometry;
      j["encode_width"] = r.width;
      j["encode_height"] = r.height;
      j["frames"] = r.frames;
      j["vae_frames"] = r.vae_frames;
      j["latent_frames"] = g.latent_frames;
      j["latent_height"] = g.latent_height;
      j["latent_width"] = g.latent_width;
      j["audio_latents"] = g.audio_latents;
      j["audio_samples"] = r.audio_samples;
      j["video_rows"] = visual_rows(refs, g);
      j["audio_rows"] = 2 * g.audio_latents;
      j["vision_grid"] = {r.vision.grid.t, r.vision.grid.h, r.vision.grid.w};
      j["vision_tokens"] = g.kind == pipeline::ReferenceKind::kAudio ? 0 : vision_tokens(refs, r.vision.grid);
      j["length_from_header"] = r.length_from_header;
    }
    list.push_back(j);
  }
  const pipeline::PresentationSize& p = refs.presentation;
  return {{"workflow", refs.workflow},
          {"ref_size", ref_size_name(refs.ref_size)},
          {"references", list},
          {"conditioner",
           {{"rows", p.rows},
            {"prompt_rows", p.prompt_rows},
            {"vision_tokens", p.vision_tokens},
            {"vision_patches", p.vision_patches},
            {"label_rows", p.label_rows},
            {"labels_counted", refs.labels_counted}}}};
}

Expected<RefSizeAlternative> other_ref_size(const Args& args, const planner::PlanInput& input,
                                            const PlannedReferences& refs) {
  RefSizeAlternative out;
  if (refs.workflow != "ref2va") return out;
  const engine::RefSize other =
      refs.ref_size == engine::RefSize::kMatch ? engine::RefSize::k2048 : engine::RefSize::kMatch;
  planner::PlanInput alt = input;
  alt.request.text_rows = refs.presentation.prompt_rows;
  alt.request.references.clear();
  OROCHI_RETURN_IF_ERROR(plan_references(args, alt, other).status());
  OROCHI_ASSIGN_OR_RETURN(const planner::MemoryPlan plan, planner::plan_memory(alt));
  out.line = format_printf("--ref-size %s instead: S = %s rows, L = %s, ~%.2f s compute per step; %s",
                           ref_size_name(other), format_grouped(plan.shape.rows).c_str(),
                           format_grouped(plan.shape.text_rows).c_str(), plan.step_compute_s,
                           planner::plan_summary_line(plan).c_str());
  out.json = {{"ref_size", ref_size_name(other)},
              {"packed_rows", plan.shape.rows},
              {"text_rows", plan.shape.text_rows},
              {"step_compute_s", plan.step_compute_s},
              {"fits", plan.fits},
              {"spare_bytes", plan.spare},
              {"shortfall_bytes", plan.shortfall},
              {"summary", planner::plan_summary_line(plan)}};
  return out;
}

}  // namespace orochi::apps
