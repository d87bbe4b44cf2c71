// Wall time of a stage, for reports: `const auto t0 = Clock::now(); ...; seconds_since(t0)`.
#pragma once

#include <chrono>

namespace orochi {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace orochi
