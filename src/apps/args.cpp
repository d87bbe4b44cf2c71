#include "apps/args.h"

#include <cstdio>
#include <cstdlib>

namespace orochi::apps {

Expected<Args> Args::parse(const std::vector<std::string>& argv, const std::set<std::string>& valued,
                           const std::set<std::string>& flags) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w.rfind("--", 0) != 0) {
      a.positionals_.push_back(w);
      continue;
    }
    const std::string name = w.substr(2);
    if (flags.count(name)) {
      a.values_[name] = "1";
    } else if (valued.count(name)) {
      if (i + 1 >= argv.size()) return invalid_argument("option --" + name + " needs a value");
      a.values_[name] = argv[++i];
    } else {
      return invalid_argument("unknown option --" + name + " (see `orochi help`)");
    }
  }
  return a;
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

Expected<int64_t> Args::get_int(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0') return invalid_argument("--" + name + " wants an integer, got '" + it->second + "'");
  return static_cast<int64_t>(v);
}

Expected<double> Args::get_double(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0') return invalid_argument("--" + name + " wants a number, got '" + it->second + "'");
  return v;
}

int fail(const Status& status) {
  std::fprintf(stderr, "orochi: %s\n", status.to_string().c_str());
  return 1;
}

}  // namespace orochi::apps
