// Non-finite values are caught at the stage that made them (a denoising step, a decoder, the text
// encoder), named, instead of surfacing as a broken video at MP4 encoding.
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::pipeline {

// ok when every value of the f32 host tensor `t` is finite; otherwise kNonFinite naming `stage`,
// how many values and the first index.
Status check_finite(const Tensor& t, const std::string& stage);

}  // namespace orochi::pipeline
