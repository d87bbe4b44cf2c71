// The orochi command line as users met it (issue 21): help on every command and `orochi help CMD`,
// one parser (`--flag value` and `--flag=value`), usage errors exit 2 everywhere, help states the
// limits and lists the options README.md's table lists, --seed takes [0, 2^64 - 1] and nothing
// else, config fields must have their JSON type, `inspect` checks shapes, and the suggestions in
// errors are requests that would be accepted.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/video_geometry.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "weights/config_fields.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;
using Result = testing::CliResult;
Result run(const std::string& args) { return testing::run_orochi(args); }
bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

const std::vector<std::string> kTopics = {"generate", "plan", "forward", "inspect", "bench dit", "bench text", "serve"};

TEST(CliHelp, EveryCommandAnswersHelpAndDashHAndHelpCmd) {
  for (const std::string& topic : kTopics) {
    const Result long_form = run(topic + " --help"), short_form = run(topic + " -h"), help = run("help " + topic);
    EXPECT_EQ(long_form.code, 0) << topic << "\n" << long_form.output;
    EXPECT_TRUE(contains(long_form.output, "usage: orochi " + topic)) << topic << "\n" << long_form.output;
    EXPECT_EQ(short_form.code, 0) << topic;
    EXPECT_EQ(help.code, 0) << topic;
    EXPECT_EQ(short_form.output, long_form.output) << topic;
    EXPECT_EQ(help.output, long_form.output) << topic;
    EXPECT_TRUE(contains(long_form.output, "exit codes: 0 done; 1")) << topic;
  }
  // Help wins over everything else on the line, and starts no work.
  const Result mixed = run("generate --frames 23 --out /nonexistent/x.mp4 --help");
  EXPECT_EQ(mixed.code, 0) << mixed.output;
  EXPECT_TRUE(contains(mixed.output, "usage: orochi generate")) << mixed.output;
  EXPECT_EQ(run("bench --help").code, 0);
  EXPECT_EQ(run("help").code, 0);
  EXPECT_EQ(run("--help").code, 0);
  EXPECT_EQ(run("help").output, run("-h").output);
  Result r = run("help frobnicate");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "no help for 'frobnicate'")) << r.output;
  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run("frobnicate").code, 2);
}

TEST(CliHelp, StatesTheLimits) {
  const Result g = run("help generate");
  for (const char* limit : {"multiples of 32 px, 32 to 8192 per side", "17n + 5 frames at 24 fps, 5 to 17005",
                            "1 to 1000", "0 to 18446744073709551615 (2^64 - 1)", "1 to 65536", "0 to 51"})
    EXPECT_TRUE(contains(g.output, limit)) << limit << "\n" << g.output;
  const Result overview = run("help");
  for (const char* limit : {"32 to 8192", "5 to 17005", "steps 1 to 1000", "seed 0 to 18446744073709551615",
                            "text rows 1 to 65536", "2 usage"})
    EXPECT_TRUE(contains(overview.output, limit)) << limit << "\n" << overview.output;
}

// The limits the help states are the ones video_geometry applies.
TEST(CliHelp, StatedCanvasAndFrameLimitsAreTheGeometrysLimits) {
  EXPECT_TRUE(pipeline::video_geometry(32, 32, 5).has_value());
  EXPECT_TRUE(pipeline::video_geometry(8192, 8192, 17005).has_value());
  EXPECT_FALSE(pipeline::video_geometry(8224, 32, 5).has_value());
  EXPECT_FALSE(pipeline::video_geometry(32, 32, 17022).has_value());
  EXPECT_FALSE(pipeline::video_geometry(0, 32, 5).has_value());
}

// The options of a README table row's first cell, or of a help text.
std::set<std::string> options_in(const std::string& text) {
  std::set<std::string> out;
  const std::regex option("--[a-z][a-z0-9-]*");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), option); it != std::sregex_iterator(); ++it)
    out.insert(it->str());
  out.erase("--help");
  return out;
}

TEST(CliHelp, ListsTheOptionsReadmeLists) {
  const fs::path readme = fs::path(testing::test_data_dir()) / ".." / ".." / "README.md";
  std::ifstream in(readme);
  if (!in) GTEST_SKIP() << "README.md is not beside the test data (" << readme << ")";
  std::map<std::string, std::string> rows;  // "generate" -> the row's command cell
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `orochi ", 0) != 0) continue;
    const std::string cell = line.substr(0, line.find("` |"));
    for (const std::string& topic : kTopics)
      if (cell.rfind("| `orochi " + topic + " ", 0) == 0 || cell == "| `orochi " + topic) rows[topic] = cell;
  }
  for (const std::string& topic : kTopics) {
    ASSERT_TRUE(rows.count(topic)) << "README.md's CLI table has no row for orochi " << topic;
    const std::set<std::string> in_readme = options_in(rows[topic]);
    const std::set<std::string> in_help = options_in(run("help " + topic).output);
    for (const std::string& o : in_help)
      EXPECT_TRUE(in_readme.count(o)) << "orochi help " << topic << " lists " << o << ", README.md's row does not";
    for (const std::string& o : in_readme)
      EXPECT_TRUE(in_help.count(o)) << "README.md's row lists " << o << ", orochi help " << topic << " does not";
  }
}

TEST(CliParser, EqualsFormIsTheSameAsTwoWords) {
  testing::TempDir dir("cli_equals");
  const Result two = run("generate --frames 23 --out " + dir.file("x.mp4"));
  const Result equals = run("generate --frames=23 --out=" + dir.file("x.mp4"));
  EXPECT_EQ(two.code, 1);
  EXPECT_EQ(equals.code, 1);
  EXPECT_TRUE(contains(equals.output, "22 and 39")) << equals.output;
  EXPECT_EQ(two.output, equals.output);
  // A value that begins with dashes is taken as written in the = form.
  const Result plan = run("plan --frames=100");
  EXPECT_EQ(plan.code, 1);
  EXPECT_TRUE(contains(plan.output, "90 and 107")) << plan.output;
}

TEST(CliParser, UsageErrorsExit2OnEveryCommand) {
  struct Case {
    std::string args, says;
  };
  std::vector<Case> cases;
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"generate", "--frames"}, {"plan", "--frames"}, {"forward", "--frames"}, {"inspect", ""},
      {"bench dit", "--frames"}, {"bench text", "--tokens"}};
  for (const auto& [command, numeric] : commands) {
    cases.push_back({command + " --bogus 1", "unknown option --bogus"});
    cases.push_back({command + " -q", "unknown option -q"});
    cases.push_back({command + " --json=1", "--json takes no value"});
    cases.push_back({command + " --json --json", "--json is given twice"});
    if (numeric.empty()) continue;
    cases.push_back({command + " " + numeric, numeric + " needs a value"});
    cases.push_back({command + " " + numeric + " --json", numeric + " needs a value, got the option --json"});
    cases.push_back({command + " " + numeric + " x", numeric + " wants an integer, got 'x'"});
    cases.push_back({command + " " + numeric + " 12abc", numeric + " wants an integer"});
    cases.push_back({command + " " + numeric + " 99999999999999999999", numeric + " must be an integer"});
  }
  cases.push_back({"generate --out --quiet", "--out needs a value, got the option --quiet"});
  cases.push_back({"generate --out", "--out needs a value"});
  cases.push_back({"generate a b", "at most one MODEL_DIR"});
  cases.push_back({"inspect a b", "inspect takes one PATH"});
  for (const Case& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.args << "\n" << r.output;
  }
  const Result r = run("generate --bogus 1");
  EXPECT_TRUE(contains(r.output, "see `orochi help generate`")) << r.output;
}

TEST(CliParser, ValuesOutsideTheirLimitsAreRefusedNotClamped) {
  testing::TempDir dir("cli_ranges");
  const std::string out = " --out " + dir.file("x.mp4");
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"--steps 0", "--steps must be an integer in [1, 1000], got 0"},
           {"--steps 1001", "--steps must be an integer in [1, 1000]"},
           {"--width 100000", "--width must be an integer in [32, 8192], got 100000"},
           {"--height 16", "--height must be an integer in [32, 8192]"},
           {"--frames 17022", "--frames must be an integer in [5, 17005]"},
           {"--text-rows 0", "--text-rows must be an integer in [1, 65536]"},
           {"--text-rows 65537", "--text-rows must be an integer in [1, 65536]"},
           {"--crf 52", "--crf must be an integer in [0, 51]"},
           {"--gpus 0", "--gpus must be an integer in [1, 64]"},
           {"--seed -1", "--seed must be an integer in [0, 18446744073709551615]"},
           {"--seed 18446744073709551616", "--seed must be an integer in [0, 18446744073709551615]"},
           {"--seed 1e3", "--seed wants an integer"},
           {"--video-shift nan", "--video-shift must be a finite number"},
           {"--audio-shift inf", "--audio-shift must be a finite number"},
           {"--video-shift 0", "--video-shift must be > 0"},
           {"--video-shift 1x", "--video-shift wants a number"},
           {"--parallel ring", "--parallel must be auto, none, tpN (tensor parallel, e.g. tp2), spN (Ulysses sequence parallel, e.g. sp2) or tpNxspM (both, e.g. tp2xsp2), got 'ring'"},
           {"--device gpu", "--device must be cpu, cuda or cuda:N"}}) {
    const Result r = run("generate " + c.args + out);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.args << "\n" << r.output;
  }
  // 2^64 - 1 is a seed: the request goes on to the next check (the frame count, exit 1).
  const Result max_seed = run("generate --seed 18446744073709551615 --frames 23" + out);
  EXPECT_EQ(max_seed.code, 1) << max_seed.output;
  EXPECT_TRUE(contains(max_seed.output, "17n + 5")) << max_seed.output;
  EXPECT_EQ(dir.entries(), 0u);
}

// "try WxH" and "the nearest valid counts are A and B" name requests that video_geometry accepts.
TEST(CliSuggestions, CanvasAndFrameSuggestionsAreValidRequests) {
  const std::regex try_canvas("try ([0-9]+)x([0-9]+)");
  for (const int64_t w : std::vector<int64_t>{-64, 0, 1, 31, 33, 100, 8000, 8191, 8193, 8208, 8224, 100000, int64_t{1} << 40})
    for (const int64_t h : {-1, 16, 48, 64, 8200, 100000}) {
      Expected<pipeline::VideoGeometry> g = pipeline::video_geometry(w, h, 22);
      if (g.has_value()) continue;
      const std::string message = g.status().message();
      std::smatch m;
      ASSERT_TRUE(std::regex_search(message, m, try_canvas)) << message;
      EXPECT_TRUE(pipeline::video_geometry(std::stoll(m[1]), std::stoll(m[2]), 22).has_value()) << message;
    }
  const std::regex counts("([0-9]+) and ([0-9]+)$"), fewest("the fewest are ([0-9]+) \\(then ([0-9]+)\\)"),
      most("the most are ([0-9]+)$");
  for (const int64_t f : {-100, 0, 4, 6, 23, 100, 16990, 17004, 17006, 17022, 100000}) {
    Expected<pipeline::VideoGeometry> g = pipeline::video_geometry(64, 64, f);
    ASSERT_FALSE(g.has_value()) << f;
    const std::string message = g.status().message();
    std::smatch m;
    std::vector<int64_t> suggested;
    if (std::regex_search(message, m, counts) || std::regex_search(message, m, fewest)) {
      suggested = {std::stoll(m[1]), std::stoll(m[2])};
    } else {
      ASSERT_TRUE(std::regex_search(message, m, most)) << message;
      suggested = {std::stoll(m[1])};
    }
    for (const int64_t s : suggested)
      EXPECT_TRUE(pipeline::video_geometry(64, 64, s).has_value()) << f << ": " << message;
  }
  // Through the CLI: forward takes any integer, so the geometry's words reach the user.
  Result r = run("forward --width 100000 --height 100000");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "try 8192x8192")) << r.output;
  r = run("forward --frames 17006");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "the most are 17005")) << r.output;
}

TEST(ConfigFields, EachFieldMustHaveItsJsonType) {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"i": 24, "f": 24.5, "whole": 24.0, "s": "24", "b": true, "big": 18446744073709551615, "neg": -3,
          "list": [1, 2, 2], "bad_list": [1, 2.5, 2], "null": null})");
  int64_t i = 7;
  EXPECT_TRUE(weights::read_int_field(j, "i", i).is_ok());
  EXPECT_EQ(i, 24);
  EXPECT_TRUE(weights::read_int_field(j, "missing", i).is_ok());
  EXPECT_TRUE(weights::read_int_field(j, "null", i).is_ok());
  EXPECT_EQ(i, 24);
  EXPECT_TRUE(weights::read_int_field(j, "neg", i).is_ok());
  EXPECT_EQ(i, -3);
  for (const char* key : {"f", "whole", "s", "b", "big", "list"}) {
    const Status s = weights::read_int_field(j, key, i);
    EXPECT_FALSE(s.is_ok()) << key;
    EXPECT_TRUE(contains(s.message(), std::string("'") + key + "' must be an integer, got ")) << s.message();
  }
  EXPECT_EQ(i, -3);  // untouched by the refusals
  double d = 0;
  EXPECT_TRUE(weights::read_double_field(j, "f", d).is_ok());
  EXPECT_EQ(d, 24.5);
  EXPECT_TRUE(weights::read_double_field(j, "i", d).is_ok());
  EXPECT_EQ(d, 24.0);
  EXPECT_FALSE(weights::read_double_field(j, "s", d).is_ok());
  EXPECT_FALSE(weights::read_double_field(j, "b", d).is_ok());
  std::vector<int64_t> list;
  EXPECT_TRUE(weights::read_int_list_field(j, "list", list, 3).is_ok());
  EXPECT_EQ(list, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_FALSE(weights::read_int_list_field(j, "list", list, 2).is_ok());
  EXPECT_FALSE(weights::read_int_list_field(j, "bad_list", list, 3).is_ok());
  bool b = false;
  EXPECT_TRUE(weights::read_bool_field(j, "b", b).is_ok());
  EXPECT_TRUE(b);
  EXPECT_FALSE(weights::read_bool_field(j, "i", b).is_ok());
  std::string s;
  EXPECT_TRUE(weights::read_string_field(j, "s", s).is_ok());
  EXPECT_FALSE(weights::read_string_field(j, "i", s).is_ok());
}

// A copy of the tiny transformer checkpoint with its config.json edited.
fs::path transformer_with_config(const testing::TempDir& dir, const std::function<void(nlohmann::json&)>& edit) {
  const fs::path from = fs::path(testing::test_data_dir()) / "h3_tiny" / "transformer";
  const fs::path to = dir.path / "transformer";
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(from))
    if (entry.path().filename() != "config.json") fs::copy_file(entry.path(), to / entry.path().filename());
  std::ifstream in(from / "config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  edit(config);
  std::ofstream(to / "config.json") << config.dump(2);
  return to;
}

TEST(CliInspect, ConfigFieldsMustHaveTheirJsonType) {
  testing::TempDir dir("cli_config_type");
  const fs::path folder = transformer_with_config(dir, [](nlohmann::json& c) { c["hidden_size"] = 24.5; });
  const Result r = run("inspect " + folder.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "'hidden_size' must be an integer, got 24.5")) << r.output;
  const Result forward = run("forward " + folder.string() + " --width 64 --height 64 --frames 5");
  EXPECT_EQ(forward.code, 1) << forward.output;
  EXPECT_TRUE(contains(forward.output, "'hidden_size' must be an integer")) << forward.output;
}

TEST(CliInspect, ChecksShapesAgainstTheConfigAsLoadingDoes) {
  testing::TempDir dir("cli_inspect_shapes");
  // The same keys, other FFN widths: only the shapes can tell.
  const fs::path folder = transformer_with_config(dir, [](nlohmann::json& c) {
    c["ffn_dim"] = c["ffn_dim"].get<int64_t>() * 2;
  });
  const Result r = run("inspect " + folder.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "has shape")) << r.output;
  EXPECT_TRUE(contains(r.output, "for this config.json")) << r.output;
  const Result json = run("inspect --json " + folder.string());
  EXPECT_EQ(json.code, 1);
  EXPECT_TRUE(contains(json.output, "\"shape_check\"")) << json.output;
  // Loading refuses the same checkpoint with the same words.
  const Result forward = run("forward " + folder.string() + " --width 64 --height 64 --frames 5");
  EXPECT_EQ(forward.code, 1) << forward.output;
  EXPECT_TRUE(contains(forward.output, "has shape")) << forward.output;
  // The untouched checkpoint passes.
  EXPECT_EQ(run("inspect " + (fs::path(testing::test_data_dir()) / "h3_tiny" / "transformer").string()).code, 0);
}

}  // namespace
}  // namespace orochi
