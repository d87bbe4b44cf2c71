// A video and its stage report, written as a pair. reserve() checks both targets before any work
// (check_output_target) and creates the two temporary files beside them at once, so an unwritable
// folder is found then, and a SIGINT/SIGTERM at any later point removes them (interrupt_cleanup.h).
// The video is written to video_temp() (any writer: io::write_mp4 takes it as its path), the report
// through write_report(), and commit() moves them into place:
//
//   under an exclusive flock(2) on the folder:  remove the old report  ->  rename the video  ->
//   rename the report
//
// so no reader ever sees a new video beside an old report (at worst, for an instant, a video
// without its report), and two runs writing the same --out commit one after the other: the final
// pair is one run's video with that same run's report. (The lock is on the folder itself, so it
// leaves no lock file behind; where the file system refuses flock, commit goes ahead unlocked.)
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

namespace orochi::io {

class OutputPair {
 public:
  static Expected<OutputPair> reserve(const std::string& video_path);
  OutputPair(OutputPair&&) noexcept;
  OutputPair& operator=(OutputPair&&) noexcept;
  ~OutputPair();  // removes the temporary files that were not committed

  const std::string& video_path() const;
  const std::string& report_path() const;
  // Where the video is written before commit(): hidden, beside video_path(), unique to this run.
  const std::string& video_temp() const;

  // Writes the report's text to its temporary file. The error says why (the OS's reason) and where.
  Status write_report(const std::string& text);

  // Moves the pair into place as described above. The report is moved only when write_report()
  // succeeded; the old report is removed either way, so it never describes the new video.
  Status commit();

 private:
  struct State;
  explicit OutputPair(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace orochi::io
