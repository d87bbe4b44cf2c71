// A progress line on stderr for long stages: "denoise  [=====>    ] 3/8  1.25 s/step  ETA 6.3 s".
// On a terminal the line redraws in place; otherwise (logs, CI) each update prints its own line.
#pragma once

#include <cstdint>
#include <string>

namespace orochi::apps {

class ProgressLine {
 public:
  // `unit` names one piece of work in the rate ("step", "chunk").
  ProgressLine(std::string stage, std::string unit, bool quiet = false);
  // `done` of `total` finished; `unit_seconds` is the last piece's time. Ends the line at done == total.
  void update(int64_t done, int64_t total, double unit_seconds);

 private:
  std::string stage_, unit_;
  bool quiet_ = false, tty_ = false;
  double total_seconds_ = 0;
};

}  // namespace orochi::apps
