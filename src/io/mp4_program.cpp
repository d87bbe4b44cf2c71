#include "io/mp4_program.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/env.h"
#include "io/output_file.h"
#include "io/wav_writer.h"
#include "io/y4m_writer.h"

extern char** environ;

namespace orochi::io {
namespace {

namespace fs = std::filesystem;

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// A private folder under the temp dir, removed with its files when this goes out of scope, and by
// SIGINT/SIGTERM (the files write_mp4_with_program puts there are registered, then the folder).
struct ScratchDir {
  fs::path path;
  std::vector<InterruptCleanup> cleanup;
  ScratchDir() {
    std::string templ = (fs::temp_directory_path() / "orochi_mp4_XXXXXX").string();
    if (!::mkdtemp(templ.data())) return;
    path = templ;
    for (const char* name : {"video.y4m", "audio.wav", "log.txt"}) cleanup.emplace_back((path / name).string());
    cleanup.emplace_back(path.string(), InterruptCleanup::Kind::kFolder);
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

std::string tail_of(const fs::path& log, size_t max_chars) {
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  return s.size() > max_chars ? "..." + s.substr(s.size() - max_chars) : s;
}

}  // namespace

std::string find_ffmpeg_program() {
  if (const std::optional<std::string> env = env_value("OROCHI_FFMPEG"); env && !env->empty())
    return is_executable_file(*env) ? *env : "";
  const std::optional<std::string> path = env_value("PATH");
  if (!path) return "";
  std::stringstream dirs(*path);
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && is_executable_file(fs::path(dir) / "ffmpeg")) return (fs::path(dir) / "ffmpeg").string();
  return "";
}

Status write_mp4_with_program(const std::string& program, const std::string& path, const VideoFrames& video,
                              const AudioTrack* audio, const Mp4Options& options) {
  OROCHI_RETURN_IF_ERROR(validate_mp4_request(video, audio, options));
  OROCHI_RETURN_IF_ERROR(check_output_path(path));
  ScratchDir scratch;
  if (scratch.path.empty()) return io_error("cannot create a temporary folder for the MP4 encode");
  const fs::path y4m = scratch.path / "video.y4m", wav = scratch.path / "audio.wav", log = scratch.path / "log.txt";
  OROCHI_RETURN_IF_ERROR(write_y4m(y4m.string(), video));
  if (audio) OROCHI_RETURN_IF_ERROR(write_wav(wav.string(), *audio));

  // Encoded under a temporary name next to `path`, renamed into place only on success. The
  // extension tells the program the container.
  TemporaryOutput out(path);
  const std::string encoded = out.path() + ".mp4";
  const InterruptCleanup encoded_cleanup(encoded);
  std::vector<std::string> args = {program, "-nostdin", "-y", "-loglevel", "error", "-i", y4m.string()};
  if (audio) args.insert(args.end(), {"-i", wav.string()});
  args.insert(args.end(), {"-map", "0:v:0", "-c:v", "libx264", "-crf", std::to_string(options.crf), "-preset",
                           options.preset, "-pix_fmt", "yuv420p"});
  if (audio) args.insert(args.end(), {"-map", "1:a:0", "-c:a", "aac", "-b:a", std::to_string(options.audio_bitrate)});
  args.insert(args.end(), {"-movflags", "+faststart", encoded});

  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return io_error("cannot run the MP4 encoder program " + program);
  int status = 0;
  if (::waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::error_code ec;
    fs::remove(encoded, ec);
    return io_error("the MP4 encoder program " + program + " failed (" +
                    (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : std::string("killed")) +
                    "): " + tail_of(log, 600));
  }
  std::error_code ec;
  fs::rename(encoded, out.path(), ec);
  if (ec) return io_error("cannot move the encoded MP4 into place: " + ec.message());
  return out.commit();
}

}  // namespace orochi::io
