#include "weights/config_fields.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace orochi::weights {
namespace {

// The field's value as it is written in the file, shortened, for the error.
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

Status wrong_type(const char* key, const char* wanted, const nlohmann::json& v) {
  return invalid_argument(std::string("config.json: '") + key + "' must be " + wanted + ", got " + shown(v));
}

// The field, or nullptr when it is missing or null (the default stays).
const nlohmann::json* field(const nlohmann::json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return nullptr;
  return &*it;
}

bool as_int(const nlohmann::json& v, int64_t& out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    out = v.get<int64_t>();
    return true;
  }
  return false;
}

}  // namespace

Status read_int_field(const nlohmann::json& config, const char* key, int64_t& out) {
  const nlohmann::json* v = field(config, key);
  if (v == nullptr) return Status::ok();
  if (!as_int(*v, out)) return wrong_type(key, "an integer", *v);
  return Status::ok();
}

Status read_double_field(const nlohmann::json& config, const char* key, double& out) {
  const nlohmann::json* v = field(config, key);
  if (v == nullptr) return Status::ok();
  if (!v->is_number()) return wrong_type(key, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d)) return wrong_type(key, "a finite number", *v);
  out = d;
  return Status::ok();
}

Status read_bool_field(const nlohmann::json& config, const char* key, bool& out) {
  const nlohmann::json* v = field(config, key);
  if (v == nullptr) return Status::ok();
  if (!v->is_boolean()) return wrong_type(key, "true or false", *v);
  out = v->get<bool>();
  return Status::ok();
}

Status read_string_field(const nlohmann::json& config, const char* key, std::string& out) {
  const nlohmann::json* v = field(config, key);
  if (v == nullptr) return Status::ok();
  if (!v->is_string()) return wrong_type(key, "a string", *v);
  out = v->get<std::string>();
  return Status::ok();
}

Status read_int_list_field(const nlohmann::json& config, const char* key, std::vector<int64_t>& out, size_t size) {
  const nlohmann::json* v = field(config, key);
  if (v == nullptr) return Status::ok();
  const std::string wanted = size > 0 ? "a list of " + std::to_string(size) + " integers" : "a list of integers";
  if (!v->is_array() || (size > 0 && v->size() != size)) return wrong_type(key, wanted.c_str(), *v);
  std::vector<int64_t> values(v->size());
  for (size_t i = 0; i < v->size(); ++i)
    if (!as_int((*v)[i], values[i])) return wrong_type(key, wanted.c_str(), *v);
  out = std::move(values);
  return Status::ok();
}

}  // namespace orochi::weights
