#include "core/precision.h"

#include <algorithm>
#include <string>

namespace orochi {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kBf16: return "bf16";
    case Precision::kFp8: return "fp8";
    case Precision::kInt8: return "int8";
  }
  return "?";
}

Expected<Precision> parse_precision(std::string_view text) {
  for (Precision p : {Precision::kBf16, Precision::kFp8, Precision::kInt8})
    if (text == precision_name(p)) return p;
  return invalid_argument("--precision takes bf16, fp8 or int8, got '" + std::string(text) + "'");
}

DType precision_weight_dtype(Precision precision) {
  switch (precision) {
    case Precision::kFp8: return DType::kF8E4M3;
    case Precision::kInt8: return DType::kI8;
    case Precision::kBf16: break;
  }
  return DType::kBF16;
}

int64_t quantized_accumulator_rows(Precision precision, int64_t rows) {
  return std::min<int64_t>(rows, precision == Precision::kInt8 ? 4096 : 1024);
}

}  // namespace orochi
