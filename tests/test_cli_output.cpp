// Where orochi writes (issue 21): the output is checked before any work (missing or unwritable
// folder, a folder, a device node or FIFO, which are never replaced, a report path equal to the
// video path, an option name taken as the path); the video and its report are committed as a pair,
// so no stale report is left beside a new video and two runs writing the same --out cannot pair one
// run's video with the other's report; a report that fails to write says why; SIGINT/SIGTERM leave
// no partial or hidden files and exit 130/143.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "io/interrupt_cleanup.h"
#include "io/output_file.h"
#include "io/output_pair.h"
#include "support/cli.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;
using Result = testing::CliResult;
bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool is_char_device(const char* path) {
  struct stat st;
  return ::lstat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

TEST(OutputTarget, RefusesWhatCannotWorkBeforeAnyWork) {
  testing::TempDir dir("output_target");
  ASSERT_EQ(::mkfifo(dir.file("pipe.mp4").c_str(), 0644), 0);
  fs::create_directory(dir.path / "folder.mp4");
  write_all(dir.path / "plain", "x");
  fs::create_directory(dir.path / "clash.json");  // the report path of clash.mp4 is a folder
  struct Case {
    std::string path, says;
    ErrorCode code;
  };
  for (const Case& c : std::vector<Case>{
           {"", "empty", ErrorCode::kInvalidArgument},
           {dir.file("folder.mp4"), "it is a folder", ErrorCode::kInvalidArgument},
           {"/dev/null", "a character device", ErrorCode::kInvalidArgument},
           {dir.file("pipe.mp4"), "a FIFO", ErrorCode::kInvalidArgument},
           {dir.file("missing/x.mp4"), "does not exist; create it first", ErrorCode::kIo},
           {dir.file("plain/x.mp4"), "is not a folder", ErrorCode::kIo},
           {dir.file("clip.json"), "ends in .json", ErrorCode::kInvalidArgument},
           {dir.file("clash.mp4"), "stage report", ErrorCode::kInvalidArgument},
           {"--quiet", "reads as an option name", ErrorCode::kUsage},
           {"/proc/orochi-test.mp4", "check that the folder is writable", ErrorCode::kIo}}) {
    Expected<std::string> report = io::check_output_target(c.path);
    ASSERT_FALSE(report.has_value()) << c.path;
    EXPECT_EQ(report.status().code(), c.code) << c.path << ": " << report.status().to_string();
    EXPECT_TRUE(contains(report.status().message(), c.says)) << c.path << ": " << report.status().message();
  }
  EXPECT_TRUE(is_char_device("/dev/null"));
  Expected<std::string> ok = io::check_output_target(dir.file("clip.mp4"));
  ASSERT_TRUE(ok.has_value()) << ok.status().to_string();
  EXPECT_EQ(*ok, dir.file("clip.json"));
  EXPECT_EQ(*io::check_output_target(dir.file("noext")), dir.file("noext.json"));
  // The probe file is gone; the refused targets are untouched.
  EXPECT_EQ(names_in(dir.path), (std::vector<std::string>{"clash.json", "folder.mp4", "pipe.mp4", "plain"}));
  struct stat st;
  ASSERT_EQ(::lstat(dir.file("pipe.mp4").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(OutputTarget, GenerateChecksItsOutputBeforeAnyWork) {
  testing::TempDir dir("output_cli");
  ASSERT_EQ(::mkfifo(dir.file("pipe.mp4").c_str(), 0644), 0);
  struct Case {
    std::string out, says;
    int code;
  };
  for (const Case& c : std::vector<Case>{{"/dev/null", "character device", 1},
                                         {dir.file("pipe.mp4"), "FIFO", 1},
                                         {dir.path.string(), "it is a folder", 1},
                                         {dir.file("missing/x.mp4"), "does not exist", 1},
                                         {dir.file("clip.json"), "ends in .json", 1},
                                         {"/proc/orochi-test.mp4", "writable", 1},
                                         {"--quiet", "--out needs a value, got the option --quiet", 2}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const Result r = testing::run_orochi("generate --out " + c.out);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.code, c.code) << c.out << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.out << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "denoise")) << "work started before the output was checked\n" << r.output;
    EXPECT_LT(seconds, 10.0) << c.out;  // the demo runs ~30 s: refused before it
  }
  EXPECT_TRUE(is_char_device("/dev/null")) << "/dev/null was replaced";
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{"pipe.mp4"});
}

TEST(OutputPair, CommitsTheVideoThenItsReportAndLeavesNoTemporaryFile) {
  testing::TempDir dir("output_pair");
  write_all(dir.path / "clip.mp4", "old video");
  write_all(dir.path / "clip.json", "old report");
  {
    Expected<io::OutputPair> pair = io::OutputPair::reserve(dir.file("clip.mp4"));
    ASSERT_TRUE(pair.has_value()) << pair.status().to_string();
    EXPECT_EQ(pair->report_path(), dir.file("clip.json"));
    EXPECT_EQ(names_in(dir.path).size(), 4u) << "the two temporary files are reserved at once";
    EXPECT_EQ(io::registered_temporary_paths(), 2);
    write_all(pair->video_temp(), "new video");
    ASSERT_TRUE(pair->write_report("new report").is_ok());
    EXPECT_EQ(read_all(dir.path / "clip.json"), "old report");  // nothing moves before commit
    ASSERT_TRUE(pair->commit().is_ok());
  }
  EXPECT_EQ(io::registered_temporary_paths(), 0);
  EXPECT_EQ(names_in(dir.path), (std::vector<std::string>{"clip.json", "clip.mp4"}));
  EXPECT_EQ(read_all(dir.path / "clip.mp4"), "new video");
  EXPECT_EQ(read_all(dir.path / "clip.json"), "new report");
}

TEST(OutputPair, NoStaleReportBesideANewVideo) {
  testing::TempDir dir("output_stale");
  write_all(dir.path / "clip.mp4", "old video");
  write_all(dir.path / "clip.json", "old report");
  Expected<io::OutputPair> pair = io::OutputPair::reserve(dir.file("clip.mp4"));
  ASSERT_TRUE(pair.has_value());
  write_all(pair->video_temp(), "new video");
  ASSERT_TRUE(pair->commit().is_ok());  // no report written: the old one must not stay
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{"clip.mp4"});
}

TEST(OutputPair, AReportThatFailsToWriteSaysWhy) {
  testing::TempDir dir("output_report_fails");
  Expected<io::OutputPair> pair = io::OutputPair::reserve(dir.file("clip.mp4"));
  ASSERT_TRUE(pair.has_value());
  // The report's temporary file replaced by a folder: the write fails with the OS's reason.
  for (const auto& e : fs::directory_iterator(dir.path))
    if (e.path().filename().string().rfind(".clip.json.partial-", 0) == 0) {
      fs::remove(e.path());
      fs::create_directory(e.path());
    }
  const Status s = pair->write_report("{}");
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(contains(s.message(), "cannot write the stage report " + dir.file("clip.json"))) << s.message();
  EXPECT_TRUE(contains(s.message(), "Is a directory")) << s.message();
}

// Eight processes commit pairs to the same path at once, in rounds: whichever wins, the video and
// the report beside it come from the same run.
TEST(OutputPair, ConcurrentRunsNeverPairOneVideoWithAnotherReport) {
  testing::TempDir dir("output_race");
  const std::string video = dir.file("clip.mp4");
  for (int round = 0; round < 6; ++round) {
    std::vector<pid_t> children;
    for (int run = 0; run < 8; ++run) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        Expected<io::OutputPair> pair = io::OutputPair::reserve(video);
        if (!pair) ::_exit(3);
        const std::string tag = "round " + std::to_string(round) + " run " + std::to_string(run);
        write_all(pair->video_temp(), tag + std::string(100000, 'v'));  // long enough to overlap
        if (!pair->write_report(tag).is_ok() || !pair->commit().is_ok()) ::_exit(4);
        ::_exit(0);
      }
      children.push_back(pid);
    }
    for (const pid_t pid : children) EXPECT_EQ(testing::wait_exit_code(pid), 0);
    const std::string report = read_all(dir.path / "clip.json");
    const std::string content = read_all(video);
    EXPECT_EQ(content.substr(0, report.size()), report) << "round " << round;
    EXPECT_EQ(names_in(dir.path), (std::vector<std::string>{"clip.json", "clip.mp4"}));
  }
}

// A child process with both kinds of temporary file (a pair and a TemporaryOutput) gets the signal.
void expect_signal_removes_temporary_files(int sig, int expected_exit) {
  testing::TempDir dir("output_signal");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);  // as a user's shell leaves them, even when this test runs in the background
    ::signal(SIGTERM, SIG_DFL);
    ::alarm(60);                // never outlive a failed test
    io::install_interrupt_cleanup();
    Expected<io::OutputPair> pair = io::OutputPair::reserve(dir.file("clip.mp4"));
    if (!pair) ::_exit(3);
    write_all(pair->video_temp(), "partial video");
    io::TemporaryOutput other(dir.file("other.wav"));
    write_all(other.path(), "partial audio");
    (void)!::write(ready[1], "r", 1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_EQ(names_in(dir.path).size(), 3u) << "the child's temporary files exist";
  ASSERT_EQ(::kill(pid, sig), 0);
  EXPECT_EQ(testing::wait_exit_code(pid), expected_exit);
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{}) << "temporary files survived the signal";
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(Interrupt, SigintAndSigtermRemoveTemporaryFilesAndExit130And143) {
  expect_signal_removes_temporary_files(SIGINT, 130);
  expect_signal_removes_temporary_files(SIGTERM, 143);
}

// The demo's `orochi generate` (~30 s on the CPU) interrupted while it denoises: exit 130 and
// nothing left in the output folder, partial or hidden.
TEST(Interrupt, CtrlCDuringGenerateLeavesNoFiles) {
  testing::TempDir dir("output_ctrl_c"), logs("output_ctrl_c_log");
  const std::string log = logs.file("stderr.txt");
  const pid_t pid = testing::spawn_orochi({"generate", "--out", dir.file("clip.mp4")}, log);
  ASSERT_GT(pid, 0);
  bool denoising = false;
  for (int i = 0; i < 1200 && !denoising; ++i) {  // up to 120 s for the first step
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    denoising = contains(read_all(log), "denoise");
  }
  EXPECT_TRUE(denoising) << read_all(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  EXPECT_EQ(testing::wait_exit_code(pid), 130) << read_all(log);
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{}) << "files left after Ctrl-C";
}

}  // namespace
}  // namespace orochi
