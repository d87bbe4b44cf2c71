// Launcher environment parsing (dist/rendezvous.h) from an injected environment.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <vector>

#include "dist/rendezvous.h"

namespace orochi {
namespace {

using Env = std::map<std::string, std::string>;

Expected<dist::Rendezvous> parse(const Env& env) {
  return dist::parse_rendezvous([&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

void expect_invalid(const Env& env, const std::string& part) {
  const Status s = parse(env).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find(part), std::string::npos) << "'" << part << "' missing from: " << s.to_string();
}

TEST(Rendezvous, NoLauncherIsOneProcess) {
  Expected<dist::Rendezvous> r = parse({});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->rank, 0);
  EXPECT_EQ(r->world_size, 1);
  EXPECT_EQ(r->local_rank, 0);
  EXPECT_EQ(r->launcher, "single");
  EXPECT_TRUE(r->master_addr.empty());
}

TEST(Rendezvous, Torchrun) {
  Expected<dist::Rendezvous> r = parse(
      {{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "1234"}});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->rank, 5);
  EXPECT_EQ(r->world_size, 8);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->master_addr, "node0");
  EXPECT_EQ(r->master_port, 1234);
  EXPECT_EQ(r->launcher, "torchrun");
  // Without MASTER_PORT and LOCAL_RANK: torchrun's defaults.
  r = parse({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"}});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->master_port, 29500);
  EXPECT_EQ(r->local_rank, 0);
}

TEST(Rendezvous, Mpirun) {
  Expected<dist::Rendezvous> r =
      parse({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->world_size, 4);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->launcher, "mpirun");
  EXPECT_TRUE(r->master_addr.empty());  // optional for mpirun
  // Both launchers' variables, agreeing: accepted.
  r = parse({{"OMPI_COMM_WORLD_RANK", "3"},
             {"OMPI_COMM_WORLD_SIZE", "4"},
             {"RANK", "3"},
             {"WORLD_SIZE", "4"},
             {"MASTER_ADDR", "h"}});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->launcher, "torchrun");
}

TEST(Rendezvous, SingleProcessTorchrunNeedsNoMaster) {
  Expected<dist::Rendezvous> r = parse({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "29400"}});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->world_size, 1);
  EXPECT_EQ(r->master_port, 0);
}

TEST(Rendezvous, InconsistentVariablesAreRefusedWithAdvice) {
  expect_invalid({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}, "RANK=2 is not below WORLD_SIZE=2");
  expect_invalid({{"RANK", "1"}, {"WORLD_SIZE", "2"}}, "MASTER_ADDR is not set");
  expect_invalid({{"RANK", "1"}}, "RANK and WORLD_SIZE must be set together");
  expect_invalid({{"WORLD_SIZE", "two"}, {"RANK", "0"}}, "WORLD_SIZE='two' is not an integer");
  expect_invalid({{"RANK", "1x"}, {"WORLD_SIZE", "2"}}, "RANK='1x'");
  expect_invalid({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, "RANK='-1'");
  expect_invalid({{"RANK", ""}, {"WORLD_SIZE", "2"}}, "RANK=''");
  expect_invalid({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE='0'");
  expect_invalid({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}},
                 "MASTER_PORT='70000'");
  expect_invalid({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"MASTER_ADDR", "h"}}, "LOCAL_RANK=2");
  expect_invalid({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}, "OMPI_COMM_WORLD_RANK=4 is not below");
  expect_invalid({{"OMPI_COMM_WORLD_RANK", "1"},
                  {"OMPI_COMM_WORLD_SIZE", "4"},
                  {"RANK", "2"},
                  {"WORLD_SIZE", "4"},
                  {"MASTER_ADDR", "h"}},
                 "disagree");
}

TEST(Rendezvous, ReadsTheProcessEnvironment) {
  // Set a torchrun world of one in this process's environment, restoring whatever was there.
  const std::vector<std::string> names = {
      "RANK",        "WORLD_SIZE",           "LOCAL_RANK",           "MASTER_ADDR",
      "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};
  std::map<std::string, std::string> saved;
  for (const std::string& n : names)
    if (const char* v = std::getenv(n.c_str())) saved[n] = v;
  for (const std::string& n : names) ::unsetenv(n.c_str());
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", "1", 1);
  Expected<dist::Rendezvous> r = dist::rendezvous_from_environment();
  ::setenv("RANK", "3", 1);
  const Status bad = dist::rendezvous_from_environment().status();
  for (const std::string& n : names) ::unsetenv(n.c_str());
  for (const auto& [n, v] : saved) ::setenv(n.c_str(), v.c_str(), 1);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->launcher, "torchrun");
  EXPECT_EQ(r->world_size, 1);
  EXPECT_EQ(bad.code(), ErrorCode::kInvalidArgument) << bad.to_string();
}

}  // namespace
}  // namespace orochi
