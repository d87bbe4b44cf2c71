// The one option parser of every orochi command: `--name value`, `--name=value` and `--flag`.
// Every mistake it finds is a usage error (ErrorCode::kUsage, exit code 2 through fail()) that names
// the option: an unknown option, a missing value, an option name where a value belongs
// (`--out --quiet`), an option given twice (unless it is repeatable), a value that is not a number or is outside its range.
// Numbers are never clamped: a value the option cannot take is refused.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::apps {

class Args {
 public:
  // `valued`: options that take a value; `flags`: options that do not. `--help` is always a flag.
  // `repeatable`: valued options that may be given more than once (--ref-image A --ref-image B);
  // their values keep the command line's order. Other words are positionals; after `--` every word is one.
  struct Option {
    std::string name, value;
  };
  static Expected<Args> parse(const std::vector<std::string>& argv, const std::set<std::string>& valued,
                              const std::set<std::string>& flags, const std::set<std::string>& repeatable = {});

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  // The value of `name` (the first one of a repeatable option), or `fallback`.
  std::string get(const std::string& name, const std::string& fallback) const;
  // Every value given for `name`, in command-line order.
  std::vector<std::string> get_all(const std::string& name) const;
  // The valued options among `names`, each occurrence in command-line order (how references
  // of several kinds keep their order).
  std::vector<Option> in_order(const std::set<std::string>& names) const;

  // Integers in [min, max] (inclusive), decimal digits with an optional leading '-'.
  Expected<int64_t> get_int(const std::string& name, int64_t fallback, int64_t min = INT64_MIN,
                            int64_t max = INT64_MAX) const;
  // Unsigned 64-bit integers: [0, 2^64 - 1], e.g. --seed; "-1" is refused, never wrapped.
  Expected<uint64_t> get_uint64(const std::string& name, uint64_t fallback) const;
  // Finite numbers in [min, max]; nan and inf are refused.
  Expected<double> get_double(const std::string& name, double fallback, double min = -1.7976931348623157e308,
                              double max = 1.7976931348623157e308) const;
  // One of `choices`; the error lists them.
  Expected<std::string> get_choice(const std::string& name, const std::string& fallback,
                                   const std::vector<std::string>& choices) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<Option> given_;  // every valued option as given, in order
  std::vector<std::string> positionals_;
};

// Integer text to a number with the range checks of Args::get_int / get_uint64, for values that do
// not come from an option (a `WxH` canvas, a `tp2` layout). `what` names the value in the error.
Expected<int64_t> parse_int(const std::string& what, const std::string& text, int64_t min = INT64_MIN,
                            int64_t max = INT64_MAX);
Expected<uint64_t> parse_uint64(const std::string& what, const std::string& text);
Expected<double> parse_double(const std::string& what, const std::string& text, double min = -1.7976931348623157e308,
                              double max = 1.7976931348623157e308);

// The exit code for an error: 2 for usage errors (the command line is wrong), 1 for the others.
int exit_code_for(const Status& status);

// Prints "orochi: <message>" to stderr (usage errors add where the command's help is) and returns
// exit_code_for(status).
int fail(const Status& status);

// The command being run ("generate", "bench dit"), for fail()'s pointer to its help; main sets it.
void set_current_command(const std::string& command);

}  // namespace orochi::apps
