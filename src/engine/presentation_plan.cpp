#include "engine/presentation_plan.h"

#include <algorithm>

#include "pipeline/fl2va_prompt.h"
#include "pipeline/ref2va_prompt.h"
#include "text/tokenizer.h"

namespace orochi::engine {

Status plan_presentation(RunPlan& plan, const ModelComponents& parts, const std::optional<std::string>& model_dir,
                         int64_t max_tokens) {
  const GenerateRequest& r = plan.request;
  if (!r.prompt || !parts.tokenizer)
    return Status(ErrorCode::kInternal, "plan_presentation: a prompt and a tokenizer are needed (check_conditioning)");
  OROCHI_ASSIGN_OR_RETURN(const text::BpeTokenizer tokenizer, text::BpeTokenizer::load(*parts.tokenizer));
  pipeline::Ref2vaProcessors processors;
  if (model_dir) {
    OROCHI_ASSIGN_OR_RETURN(processors.images, pipeline::image_processor_config(*model_dir));
    OROCHI_ASSIGN_OR_RETURN(processors.videos, pipeline::video_processor_config(*model_dir));
  }
  pipeline::ConditionerInputs inputs;
  if (plan.workflow == "fl2va") {
    OROCHI_ASSIGN_OR_RETURN(inputs, pipeline::prepare_fl2va_prompt(tokenizer, processors.images, *r.prompt,
                                                                   plan.keyframes, max_tokens));
  } else if (plan.workflow == "ref2va") {
    OROCHI_ASSIGN_OR_RETURN(inputs, pipeline::prepare_ref2va_prompt(tokenizer, processors, *r.prompt,
                                                                    plan.references, max_tokens));
  } else {
    return Status(ErrorCode::kInternal, "plan_presentation: " + plan.workflow + " presents no pictures");
  }
  const int64_t vision_tokens =
      inputs.size() - static_cast<int64_t>(std::count(inputs.presentation.dit_tags.begin(),
                                                      inputs.presentation.dit_tags.end(), pipeline::kH3TextTag));
  plan.notes.push_back(plan.workflow + " presentation: " + std::to_string(inputs.size()) + " tokens, " +
                       std::to_string(vision_tokens) + " of them vision rows (tag 0), from " +
                       std::to_string(inputs.vision_patches()) + " vision-tower patches");
  plan.prompt_ids = inputs.token_ids;
  plan.request.text_rows = inputs.size();
  plan.conditioner = std::move(inputs);
  return Status::ok();
}

}  // namespace orochi::engine
