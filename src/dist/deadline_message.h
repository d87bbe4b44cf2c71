// The words every Comm implementation uses when an operation misses its deadline, so a user sees
// the same message whatever carried the data:
//   "comm group 'sp' (2 ranks): all_to_all call #5 did not complete within 1000 ms: rank 1 did
//    not arrive (rank 0 waited). A rank is stalled, crashed or took another code path; raise
//    --comm-timeout if the ranks are just slow"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dist/comm.h"

namespace orochi::dist {

// "rank 3" or "ranks 1, 2".
std::string list_ranks(const std::vector<int>& ranks);

// The head of the message, up to and including "within N ms" (plus `detail`, e.g. " (pending
// 1001 ms)"), then ": ".
std::string deadline_head(const CommOptions& options, int size, const std::string& op, int64_t call,
                          const std::string& detail = "");

// Who did not arrive and who waited; `present` may be empty.
std::string missing_ranks(const std::vector<int>& missing, const std::vector<int>& present);

inline constexpr const char* kDeadlineAdvice = "raise --comm-timeout if the ranks are just slow";

}  // namespace orochi::dist
