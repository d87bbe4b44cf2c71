#include "apps/video_output.h"

#include "io/mp4.h"
#include "io/video_frames.h"

namespace orochi::apps {

Expected<WrittenVideo> write_video_and_report(engine::RunResult& ran, io::OutputPair& output, int crf,
                                              Clock::time_point started) {
  engine::RunReport& report = ran.report;
  // MP4 (H.264 + AAC) under its temporary name, then the report, then both into place.
  const auto t_encode = Clock::now();
  OROCHI_ASSIGN_OR_RETURN(const io::VideoFrames video, io::video_from_planar_floats(ran.result.frames));
  OROCHI_ASSIGN_OR_RETURN(const io::AudioTrack audio,
                          io::audio_from_planar_floats(ran.result.waveform, ran.result.sample_rate));
  io::Mp4Options mp4;
  mp4.crf = crf;
  OROCHI_RETURN_IF_ERROR(io::write_mp4(output.video_temp(), video, &audio, mp4));
  report.encode_s = seconds_since(t_encode);
  report.output = output.video_path();
  report.result = std::move(ran.result);
  report.result.frames = Tensor();
  report.result.waveform = Tensor();
  report.e2e_s = seconds_since(started);
  WrittenVideo written;
  written.report = engine::report_json(report);
  written.width = video.width;
  written.height = video.height;
  written.frames = video.frames;
  written.seconds = video.duration_seconds();
  // A report that cannot be written does not cost the video: the pair commits without it (the old
  // report is removed either way), then the run fails with the report's reason.
  const Status report_written = output.write_report(written.report.dump(2) + "\n");
  OROCHI_RETURN_IF_ERROR(output.commit());
  OROCHI_RETURN_IF_ERROR(report_written);
  return written;
}

}  // namespace orochi::apps
