#include "engine/random_presentation.h"

#include "engine/reference_inputs.h"
#include "engine/reference_plan.h"

namespace orochi::engine {

Expected<int64_t> random_presentation_rows(const RunPlan& plan) {
  const GenerateRequest& r = plan.request;
  const pipeline::SegmentTokenCount count = pipeline::estimated_segment_tokens();
  pipeline::PresentationSize size;
  if (plan.workflow == "fl2va") {
    std::vector<pipeline::VisionGrid> grids;
    for (size_t i = 0; i < plan.keyframes.size(); ++i) {
      OROCHI_ASSIGN_OR_RETURN(const pipeline::VisionGrid grid, keyframe_vision_grid(r.width, r.height));
      grids.push_back(grid);
    }
    OROCHI_ASSIGN_OR_RETURN(size, pipeline::fl2va_presentation_size(grids, r.text_rows, count));
  } else {
    OROCHI_ASSIGN_OR_RETURN(const ReferenceCheck checked, check_references(r));
    OROCHI_ASSIGN_OR_RETURN(const std::vector<PlannedReference> planned,
                            plan_references_from_headers(checked, r, reference_rules(r.ref_size, false)));
    OROCHI_ASSIGN_OR_RETURN(size, pipeline::ref2va_presentation_size(presentation_references(planned), r.text_rows, count));
  }
  return size.rows;
}

}  // namespace orochi::engine
