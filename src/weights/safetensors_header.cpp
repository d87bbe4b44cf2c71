#include "weights/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace orochi::weights::detail {
namespace {

using nlohmann::json;

constexpr const char* kRedownload = "re-download or re-convert it";

// Every error names the file and says what to do; `what` describes the problem.
Status corrupt(const std::string& label, const std::string& what) {
  return corrupt_file(label + ": " + what + "; the file is corrupt: " + kRedownload);
}

// A short rendering of a JSON value for messages. Only scalars are dumped: dump() recurses, and a
// hostile header could nest arrays deeply enough to exhaust the stack.
std::string brief(const json& v) {
  if (v.is_primitive() && !v.is_string()) return v.dump();
  if (v.is_string()) return quote_name(v.get_ref<const std::string&>());
  return std::string("a JSON ") + v.type_name();
}

// The parser's message quotes the offending bytes; keep binary garbage out of terminals and logs.
std::string printable(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return s;
}

// A non-negative JSON integer that fits in uint64 (floats like 2.0 or 1e3 do not count: the
// safetensors spec writes integers, and accepting floats would hide rounding).
bool as_u64(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

std::string supported_dtypes() {
  std::string s;
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3, DType::kF8E5M2, DType::kF64, DType::kI64,
                  DType::kI32, DType::kI16, DType::kI8, DType::kU8, DType::kBool}) {
    s += (s.empty() ? "" : ", ");
    s += dtype_safetensors_name(d);
  }
  return s;
}

Status parse_metadata(const json& v, const std::string& label,
                      std::map<std::string, std::string>* out) {
  if (!v.is_object())
    return corrupt(label, "\"__metadata__\" must be an object of strings, got " + brief(v));
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      return corrupt(label, "\"__metadata__\" entry " + quote_name(key) +
                                " must be a string, got " + brief(value));
    (*out)[key] = value.get<std::string>();
  }
  return Status::ok();
}

Status parse_entry(const std::string& name, const json& v, uint64_t data_bytes,
                   const std::string& label, TensorInfo* info) {
  const std::string where = label + ": tensor " + quote_name(name);
  auto bad = [&](const std::string& what) {
    return corrupt(label, "tensor " + quote_name(name) + ": " + what);
  };
  if (!v.is_object()) return bad("entry must be an object, got " + brief(v));
  info->name = name;

  const auto dtype_it = v.find("dtype");
  if (dtype_it == v.end() || !dtype_it->is_string())
    return bad("\"dtype\" is missing or not a string");
  const auto dtype = dtype_from_safetensors_name(dtype_it->get_ref<const std::string&>());
  if (!dtype)
    // A valid file may use a dtype we lack (U32, a GGUF-style quant): say which.
    return unsupported(where + " has dtype " + brief(*dtype_it) +
                       ", which Orochi does not read (it reads " + supported_dtypes() +
                       "); convert the checkpoint to one of those");
  info->dtype = *dtype;

  const auto shape_it = v.find("shape");
  if (shape_it == v.end() || !shape_it->is_array()) return bad("\"shape\" is missing or not an array");
  info->shape.clear();
  for (size_t i = 0; i < shape_it->size(); ++i) {
    uint64_t d = 0;
    const json& dim = (*shape_it)[i];
    if (!as_u64(dim, &d) || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return bad("shape[" + std::to_string(i) + "] is " + brief(dim) +
                 "; dims must be non-negative integers");
    info->shape.push_back(static_cast<int64_t>(d));
  }

  const auto off_it = v.find("data_offsets");
  if (off_it == v.end() || !off_it->is_array() || off_it->size() != 2 ||
      !as_u64((*off_it)[0], &info->begin) || !as_u64((*off_it)[1], &info->end))
    return bad("\"data_offsets\" must be [begin, end], two non-negative integers");
  if (info->begin > info->end)
    return bad("data_offsets [" + std::to_string(info->begin) + ", " + std::to_string(info->end) +
               "] end before they begin");

  // numel * element size, with overflow checks: a hostile shape must not wrap around to a match.
  // Zero dims are skipped in the check, so [0, 2^40, 2^40] is refused like [2^40, 2^40, 0]: its
  // strides would overflow int64 even though it holds no bytes.
  int64_t addressable = static_cast<int64_t>(dtype_size(info->dtype));
  bool empty = false;
  for (int64_t d : info->shape) {
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(addressable, d, &addressable))
      return bad("shape " + shape_to_string(info->shape) + " is too large to address");
  }
  const uint64_t bytes = empty ? 0 : static_cast<uint64_t>(addressable);
  if (bytes != info->end - info->begin)
    return bad(std::string(dtype_safetensors_name(info->dtype)) + shape_to_string(info->shape) +
               " needs " + std::to_string(bytes) + " bytes but data_offsets [" +
               std::to_string(info->begin) + ", " + std::to_string(info->end) + "] span " +
               std::to_string(info->end - info->begin));
  if (info->end > data_bytes)
    return corrupt_file(where + " ends at byte " + std::to_string(info->end) +
                        " of the data section, which holds only " + std::to_string(data_bytes) +
                        " bytes: the file is truncated: " + kRedownload);
  return Status::ok();
}

// Tensors may leave gaps (the spec's writers never do, but readers tolerate it) yet never share
// bytes: overlapping views would alias weights that are meant to be independent.
Status check_no_overlap(std::vector<TensorInfo>& tensors, const std::string& label) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const TensorInfo* last = nullptr;  // the non-empty tensor reaching furthest so far
  for (const TensorInfo& t : tensors) {
    if (t.begin == t.end) continue;  // an empty tensor owns no bytes
    if (last != nullptr && t.begin < last->end)
      return corrupt(label, "tensors " + quote_name(last->name) + " [" +
                                std::to_string(last->begin) + ", " + std::to_string(last->end) +
                                ") and " + quote_name(t.name) + " [" + std::to_string(t.begin) +
                                ", " + std::to_string(t.end) + ") overlap");
    if (last == nullptr || t.end > last->end) last = &t;
  }
  return Status::ok();
}

}  // namespace

std::string quote_name(std::string_view name) {
  constexpr size_t kMax = 120;
  if (name.size() <= kMax) return "'" + std::string(name) + "'";
  return "'" + std::string(name.substr(0, kMax)) + "...' (" + std::to_string(name.size()) +
         " chars)";
}

Expected<SafetensorsHeader> parse_safetensors_header(std::string_view json_text,
                                                     uint64_t data_bytes,
                                                     const std::string& label) {
  json root;
  try {
    root = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    return corrupt(label, "the header is not valid JSON (" + printable(e.what()) + ")");
  }
  if (!root.is_object())
    return corrupt(label, "the header must be a JSON object, got " + brief(root));

  SafetensorsHeader header;
  header.tensors.reserve(root.size());
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      OROCHI_RETURN_IF_ERROR(parse_metadata(value, label, &header.metadata));
      continue;
    }
    TensorInfo info;
    OROCHI_RETURN_IF_ERROR(parse_entry(key, value, data_bytes, label, &info));
    header.tensors.push_back(std::move(info));
  }
  OROCHI_RETURN_IF_ERROR(check_no_overlap(header.tensors, label));
  return header;
}

}  // namespace orochi::weights::detail
