#include "apps/progress.h"

#include <unistd.h>

#include <cstdio>

namespace orochi::apps {

ProgressLine::ProgressLine(std::string stage, std::string unit, bool quiet)
    : stage_(std::move(stage)), unit_(std::move(unit)), quiet_(quiet), tty_(isatty(STDERR_FILENO) == 1) {}

void ProgressLine::update(int64_t done, int64_t total, double unit_seconds) {
  total_seconds_ += unit_seconds;
  if (quiet_ || total <= 0) return;
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(kWidth * done / total);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = '\0';
  const double per_unit = done > 0 ? total_seconds_ / static_cast<double>(done) : 0.0;
  const double eta = per_unit * static_cast<double>(total - done);
  if (done == 0) {  // started: the first unit's time is not known yet
    std::fprintf(stderr, "%s%-13s [%s] 0/%lld  started%s", tty_ ? "\r" : "", stage_.c_str(), bar,
                 static_cast<long long>(total), tty_ ? "" : "\n");
    std::fflush(stderr);
    return;
  }
  std::fprintf(stderr, "%s%-13s [%s] %lld/%lld  %.2f s/%s  %s %.1f s%s", tty_ ? "\r" : "", stage_.c_str(), bar,
               static_cast<long long>(done), static_cast<long long>(total), per_unit, unit_.c_str(),
               done < total ? "ETA" : "total", done < total ? eta : total_seconds_,
               tty_ && done < total ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace orochi::apps
