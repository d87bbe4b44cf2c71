#include "apps/args.h"

#include "core/check.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace orochi::apps {
namespace {

std::string current_command;

// A word that reads as an option name (`--quiet`, `--out=x`), as opposed to a value that happens to
// begin with a dash (`-3`, `-`).
bool looks_like_option(const std::string& w) {
  return w.size() > 2 && w[0] == '-' && w[1] == '-' && std::isalpha(static_cast<unsigned char>(w[2]));
}

std::string range_text(int64_t min, int64_t max) {
  if (min == INT64_MIN && max == INT64_MAX) return "of at most 64 bits";
  if (max == INT64_MAX) return ">= " + std::to_string(min);
  if (min == INT64_MIN) return "<= " + std::to_string(max);
  return "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Expected<Args> Args::parse(const std::vector<std::string>& argv, const std::set<std::string>& valued,
                           const std::set<std::string>& flags, const std::set<std::string>& repeatable) {
  for (const std::string& name : repeatable)
    OROCHI_CHECK(valued.count(name) > 0, "repeatable option --" + name + " must be a valued option");
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w == "--") {  // the rest are positionals, even when they begin with dashes
      a.positionals_.insert(a.positionals_.end(), argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      break;
    }
    if (w.size() >= 2 && w[0] == '-' && std::isalpha(static_cast<unsigned char>(w[1])))
      return usage_error("unknown option " + w + " (options are spelled --name; -h is the only short one)");
    if (w.rfind("--", 0) != 0 || w.size() == 2) {
      a.positionals_.push_back(w);
      continue;
    }
    const size_t eq = w.find('=');
    const std::string name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool is_flag = flags.count(name) > 0 || name == "help";
    if (!is_flag && valued.count(name) == 0)
      return usage_error("unknown option --" + name);
    if (a.values_.count(name) && repeatable.count(name) == 0)
      return usage_error("--" + name + " is given twice; pass it once");
    if (is_flag) {
      if (eq != std::string::npos) return usage_error("--" + name + " takes no value, got '" + w + "'");
      a.values_[name] = "1";
      continue;
    }
    if (eq != std::string::npos) {  // --name=value: the value is taken as written, dashes included
      a.values_.emplace(name, w.substr(eq + 1));
      a.given_.push_back({name, w.substr(eq + 1)});
      continue;
    }
    if (i + 1 >= argv.size()) return usage_error("--" + name + " needs a value");
    const std::string& value = argv[i + 1];
    if (looks_like_option(value))
      return usage_error("--" + name + " needs a value, got the option " + value + " (write --" + name + "=" +
                         value + " if that is the value you mean)");
    a.values_.emplace(name, value);
    a.given_.push_back({name, value});
    ++i;
  }
  return a;
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  std::vector<std::string> out;
  for (const Option& o : given_)
    if (o.name == name) out.push_back(o.value);
  return out;
}

std::vector<Args::Option> Args::in_order(const std::set<std::string>& names) const {
  std::vector<Option> out;
  for (const Option& o : given_)
    if (names.count(o.name)) out.push_back(o);
  return out;
}

Expected<int64_t> parse_int(const std::string& what, const std::string& text, int64_t min, int64_t max) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
    return usage_error(what + " wants an integer, got '" + text + "'");
  if (ec == std::errc::result_out_of_range || v < min || v > max)
    return usage_error(what + " must be an integer " + range_text(min, max) + ", got " + text);
  return v;
}

Expected<uint64_t> parse_uint64(const std::string& what, const std::string& text) {
  const std::string range = "in [0, 18446744073709551615] (2^64 - 1)";
  const bool negative = !text.empty() && text[0] == '-';
  uint64_t v = 0;
  const char* begin = text.data() + (negative ? 1 : 0);
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (begin == end || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
    return usage_error(what + " wants an integer, got '" + text + "'");
  if (negative && v == 0) return uint64_t{0};  // "-0"
  if (negative || ec == std::errc::result_out_of_range)
    return usage_error(what + " must be an integer " + range + ", got " + text);
  return v;
}

Expected<double> parse_double(const std::string& what, const std::string& text, double min, double max) {
  char* end = nullptr;
  const double v = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0') return usage_error(what + " wants a number, got '" + text + "'");
  if (!std::isfinite(v)) return usage_error(what + " must be a finite number, got " + text);
  if (v < min || v > max)
    return usage_error(what + " must be in [" + number_text(min) + ", " + number_text(max) + "], got " + text);
  return v;
}

Expected<int64_t> Args::get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  return parse_int("--" + name, it->second, min, max);
}

Expected<uint64_t> Args::get_uint64(const std::string& name, uint64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  return parse_uint64("--" + name, it->second);
}

Expected<double> Args::get_double(const std::string& name, double fallback, double min, double max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  return parse_double("--" + name, it->second, min, max);
}

Expected<std::string> Args::get_choice(const std::string& name, const std::string& fallback,
                                       const std::vector<std::string>& choices) const {
  const std::string v = get(name, fallback);
  std::string list;
  for (const std::string& c : choices) {
    if (c == v) return v;
    list += (list.empty() ? "" : ", ") + c;
  }
  return usage_error("--" + name + " must be one of " + list + "; got '" + v + "'");
}

int exit_code_for(const Status& status) {
  if (status.is_ok()) return 0;
  return status.code() == ErrorCode::kUsage ? 2 : 1;
}

void set_current_command(const std::string& command) { current_command = command; }

int fail(const Status& status) {
  std::fprintf(stderr, "orochi: %s\n", status.to_string().c_str());
  if (status.code() == ErrorCode::kUsage)
    std::fprintf(stderr, "see `orochi help%s` for the options and their limits\n",
                 current_command.empty() ? "" : (" " + current_command).c_str());
  return exit_code_for(status);
}

}  // namespace orochi::apps
