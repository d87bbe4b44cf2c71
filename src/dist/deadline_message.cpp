#include "dist/deadline_message.h"

namespace orochi::dist {

std::string list_ranks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::string deadline_head(const CommOptions& options, int size, const std::string& op, int64_t call,
                          const std::string& detail) {
  return "comm group '" + options.name + "' (" + std::to_string(size) + " ranks): " + op + " call #" +
         std::to_string(call) + " did not complete within " + std::to_string(options.deadline.count()) + " ms" +
         detail + ": ";
}

std::string missing_ranks(const std::vector<int>& missing, const std::vector<int>& present) {
  std::string s = list_ranks(missing) + " did not arrive";
  if (!present.empty()) s += " (" + list_ranks(present) + " waited)";
  return s;
}

}  // namespace orochi::dist
