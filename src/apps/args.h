// A small `--name value` / `--flag` parser for the subcommands: unknown options and malformed
// numbers are user errors with the option named, never a crash.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::apps {

class Args {
 public:
  // `valued`: options that take a value; `flags`: options that do not. Other words are positionals.
  static Expected<Args> parse(const std::vector<std::string>& argv, const std::set<std::string>& valued,
                              const std::set<std::string>& flags);

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  std::string get(const std::string& name, const std::string& fallback) const;
  Expected<int64_t> get_int(const std::string& name, int64_t fallback) const;
  Expected<double> get_double(const std::string& name, double fallback) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

// Prints "orochi: <message>" to stderr and returns exit code 1.
int fail(const Status& status);

}  // namespace orochi::apps
