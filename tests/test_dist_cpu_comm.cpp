// In-process CPU ranks (dist/cpu_comm.h): every collective against a naive expectation on 2-8
// ranks, overlapping TP and SP groups, argument errors, and the deadline machinery (a stalled
// rank, a killed rank, a rank that aborts the group after its own error).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "core/check.h"
#include "dist/cpu_comm.h"
#include "dist/workers.h"

namespace orochi {
namespace {

using dist::Comm;
using dist::CpuCommGroup;
using Clock = std::chrono::steady_clock;

std::vector<std::unique_ptr<Comm>> members_of(CpuCommGroup& group) {
  std::vector<std::unique_ptr<Comm>> members;
  for (int r = 0; r < group.size(); ++r) members.push_back(group.member(r));
  return members;
}

std::vector<float> rank_floats(int rank, int64_t count) {
  std::mt19937 rng(100 + rank);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

void expect_all_ok(const std::vector<Status>& statuses) {
  for (size_t r = 0; r < statuses.size(); ++r)
    EXPECT_TRUE(statuses[r].is_ok()) << "rank " << r << ": " << statuses[r].to_string();
}

dist::CommOptions named(const std::string& name) {
  dist::CommOptions o;
  o.name = name;
  return o;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(CpuComm, AllReduceF32SumsInRankOrderOnEveryRank) {
  for (int n : {2, 3, 4, 8}) {
    SCOPED_TRACE(n);
    auto group = CpuCommGroup::create(n);
    auto members = members_of(*group);
    const int64_t count = 1001;
    std::vector<float> expected = rank_floats(0, count);
    for (int r = 1; r < n; ++r)
      for (int64_t k = 0; k < count; ++k) expected[k] += rank_floats(r, count)[k];
    std::vector<std::vector<float>> data(n);
    expect_all_ok(dist::Workers(n).run([&](int r) {
      data[r] = rank_floats(r, count);
      return members[r]->all_reduce_sum(data[r].data(), count, DType::kF32);
    }));
    for (int r = 0; r < n; ++r) EXPECT_EQ(data[r], expected) << "rank " << r;
  }
}

TEST(CpuComm, AllReduceBf16IsBitIdenticalAndRoundedOnce) {
  for (int n : {2, 3, 4, 8}) {
    SCOPED_TRACE(n);
    auto group = CpuCommGroup::create(n);
    auto members = members_of(*group);
    const int64_t count = 513;
    std::vector<std::vector<uint16_t>> data(n, std::vector<uint16_t>(count));
    for (int r = 0; r < n; ++r)
      for (int64_t k = 0; k < count; ++k) data[r][k] = f32_to_bf16(rank_floats(r, count)[k]);
    std::vector<uint16_t> expected(count);
    for (int64_t k = 0; k < count; ++k) {
      float acc = bf16_to_f32(data[0][k]);
      for (int r = 1; r < n; ++r) acc += bf16_to_f32(data[r][k]);
      expected[k] = f32_to_bf16(acc);
    }
    expect_all_ok(
        dist::Workers(n).run([&](int r) { return members[r]->all_reduce_sum(data[r].data(), count, DType::kBF16); }));
    for (int r = 0; r < n; ++r) EXPECT_EQ(std::memcmp(data[r].data(), expected.data(), count * 2), 0) << "rank " << r;
  }
}

TEST(CpuComm, AllReduceIntegersAndF64) {
  for (int n : {2, 3, 4, 8}) {
    auto group = CpuCommGroup::create(n);
    auto members = members_of(*group);
    std::vector<std::vector<int64_t>> i64(n);
    std::vector<std::vector<int32_t>> i32(n);
    std::vector<std::vector<double>> f64(n);
    expect_all_ok(dist::Workers(n).run([&](int r) {
      i64[r] = {r, int64_t{1} << 40, -7 * r};
      i32[r] = {r * r, -1};
      f64[r] = {0.5 * r, 1e-300};
      OROCHI_RETURN_IF_ERROR(members[r]->all_reduce_sum(i64[r].data(), 3, DType::kI64));
      OROCHI_RETURN_IF_ERROR(members[r]->all_reduce_sum(i32[r].data(), 2, DType::kI32));
      return members[r]->all_reduce_sum(f64[r].data(), 2, DType::kF64);
    }));
    const int64_t tri = n * (n - 1) / 2, squares = (n - 1) * n * (2 * n - 1) / 6;
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(i64[r], (std::vector<int64_t>{tri, n * (int64_t{1} << 40), -7 * tri}));
      EXPECT_EQ(i32[r], (std::vector<int32_t>{static_cast<int32_t>(squares), -n}));
      EXPECT_EQ(f64[r], (std::vector<double>{0.5 * tri, n * 1e-300}));
    }
  }
}

TEST(CpuComm, AllGatherPlacesRankBlocksInOrder) {
  const int n = 3;
  auto group = CpuCommGroup::create(n);
  auto members = members_of(*group);
  std::vector<std::vector<int32_t>> recv(n, std::vector<int32_t>(n * 4, -1));
  expect_all_ok(dist::Workers(n).run([&](int r) {
    const std::vector<int32_t> send = {10 * r, 10 * r + 1, 10 * r + 2, 10 * r + 3};
    return members[r]->all_gather(send.data(), recv[r].data(), 4, DType::kI32);
  }));
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < n * 4; ++j) EXPECT_EQ(recv[r][j], 10 * (j / 4) + j % 4);
}

// Rank i sends (i + 2j) % 4 elements to rank j (some zero); each block lands at a gapped offset.
TEST(CpuComm, AllToAllUnevenCountsMatchNaiveExpectation) {
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE(n);
    auto count = [](int i, int j) { return int64_t{(i + 2 * j) % 4}; };
    auto value = [](int i, int j, int64_t k) { return static_cast<uint16_t>(1000 * i + 100 * j + k); };
    auto group = CpuCommGroup::create(n);
    auto members = members_of(*group);
    std::vector<std::vector<uint16_t>> received(n);
    expect_all_ok(dist::Workers(n).run([&](int i) {
      std::vector<int64_t> sc, so, rc, ro;
      std::vector<uint16_t> send;
      int64_t recv_total = 0;
      for (int j = 0; j < n; ++j) {
        sc.push_back(count(i, j));
        so.push_back(static_cast<int64_t>(send.size()));
        for (int64_t k = 0; k < count(i, j); ++k) send.push_back(value(i, j, k));
        rc.push_back(count(j, i));
        ro.push_back(recv_total + 1);  // one spare element before each block
        recv_total += count(j, i) + 1;
      }
      received[i].assign(recv_total, 0xffff);
      return members[i]->all_to_all(send.data(), sc, so, received[i].data(), rc, ro, DType::kBF16);
    }));
    for (int i = 0; i < n; ++i) {
      std::vector<uint16_t> expected;
      for (int j = 0; j < n; ++j) {
        expected.push_back(0xffff);
        for (int64_t k = 0; k < count(j, i); ++k) expected.push_back(value(j, i, k));
      }
      EXPECT_EQ(received[i], expected) << "rank " << i;
    }
  }
}

TEST(CpuComm, OverlappingTpAndSpGroupsUsedInterleaved) {
  // World ranks 0..3: TP groups {0,1}, {2,3}; SP groups {0,2}, {1,3}.
  std::vector<std::shared_ptr<CpuCommGroup>> tp = {CpuCommGroup::create(2, named("tp")),
                                                   CpuCommGroup::create(2, named("tp"))};
  std::vector<std::shared_ptr<CpuCommGroup>> sp = {CpuCommGroup::create(2, named("sp")),
                                                   CpuCommGroup::create(2, named("sp"))};
  std::vector<std::unique_ptr<Comm>> tp_of(4), sp_of(4);
  for (int w = 0; w < 4; ++w) {
    tp_of[w] = tp[w / 2]->member(w % 2);
    sp_of[w] = sp[w % 2]->member(w / 2);
  }
  std::vector<std::vector<int64_t>> seen(4);
  expect_all_ok(dist::Workers(4).run([&](int w) {
    for (int64_t step = 0; step < 20; ++step) {
      int64_t x = w + 10 * step;
      OROCHI_RETURN_IF_ERROR(tp_of[w]->all_reduce_sum(&x, 1, DType::kI64));  // (w/2)*2 pair sum
      int64_t both[2];
      OROCHI_RETURN_IF_ERROR(sp_of[w]->all_gather(&x, both, 1, DType::kI64));
      seen[w].push_back(both[0] * 1000 + both[1]);
    }
    return Status::ok();
  }));
  for (int w = 0; w < 4; ++w)
    for (int64_t step = 0; step < 20; ++step) {
      // TP group g sums ranks 2g and 2g+1: 4g + 1 + 20 step; SP gathers group 0's then group 1's.
      const int64_t g0 = 1 + 20 * step, g1 = 5 + 20 * step;
      EXPECT_EQ(seen[w][step], g0 * 1000 + g1) << "world rank " << w << " step " << step;
    }
}

TEST(CpuComm, HeartbeatIsTheMinimum) {
  auto group = CpuCommGroup::create(4);
  auto members = members_of(*group);
  std::vector<int64_t> got(4);
  expect_all_ok(dist::Workers(4).run([&](int r) {
    Expected<int64_t> m = members[r]->all_reduce_min(int64_t{10} - 3 * r);
    if (!m) return m.status();
    got[r] = *m;
    return members[r]->synchronize();
  }));
  EXPECT_EQ(got, (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(CpuComm, DisagreeingCountsAndCallsFailOnEveryRank) {
  auto group = CpuCommGroup::create(2, named("sp"));
  auto members = members_of(*group);
  // Rank 0 sends 2 elements to rank 1, which expects 3.
  std::vector<Status> s = dist::Workers(2).run([&](int r) {
    std::vector<float> send(4, 1.0f), recv(4);
    const std::vector<int64_t> sc = {1, r == 0 ? 2 : 1}, so = {0, 1};
    const std::vector<int64_t> rc = {r == 1 ? 3 : 1, 1}, ro = {0, r == 1 ? 3 : 1};
    return members[r]->all_to_all(send.data(), sc, so, recv.data(), rc, ro, DType::kF32);
  });
  for (const Status& st : s) {
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.message().find("rank 0 sends 2 elements to rank 1, which expects 3"), std::string::npos)
        << st.to_string();
  }
  // Wrong list length and overlapping receive regions are named with the rank that passed them.
  s = dist::Workers(2).run([&](int r) {
    std::vector<float> buf(4);
    const std::vector<int64_t> rc = {2, 2}, ro = {0, r == 1 ? 1 : 2};
    return r == 0 ? members[r]->all_to_all(buf.data(), {2}, {0}, buf.data(), {2}, {0}, DType::kF32)
                  : members[r]->all_to_all(buf.data(), {2, 2}, {0, 0}, buf.data(), rc, ro, DType::kF32);
  });
  EXPECT_NE(s[1].message().find("rank 0 called all_to_all with bad arguments"), std::string::npos) << s[1].to_string();
  // Different operations at the same call number, then a dtype all_reduce cannot sum.
  s = dist::Workers(2).run([&](int r) {
    float x[2] = {1, 2};
    return r == 0 ? members[r]->all_reduce_sum(x, 1, DType::kF32) : members[r]->all_gather(x, x, 1, DType::kF32);
  });
  EXPECT_NE(s[0].message().find("took different code paths"), std::string::npos) << s[0].to_string();
  s = dist::Workers(2).run([&](int r) {
    uint8_t x = 1;
    return members[r]->all_reduce_sum(&x, 1, DType::kU8);
  });
  EXPECT_NE(s[1].message().find("cannot sum u8"), std::string::npos) << s[1].to_string();
  // Every rank saw the same failures, so the group is still in step and usable.
  expect_all_ok(dist::Workers(2).run([&](int r) {
    float x = 1;
    return members[r]->all_reduce_sum(&x, 1, DType::kF32);
  }));
}

dist::CommOptions faulty(dist::FaultInjection::Kind kind, int rank, int64_t at_call) {
  dist::CommOptions o;
  o.name = "tp";
  o.deadline = std::chrono::milliseconds(300);
  o.fault = {kind, rank, at_call};
  return o;
}

TEST(CpuCommDeadline, StalledRankFailsEveryRankWithinTheDeadline) {
  auto group = CpuCommGroup::create(2, faulty(dist::FaultInjection::Kind::kStall, 1, 2));
  auto members = members_of(*group);
  std::vector<double> elapsed(2);
  std::vector<Status> later(2);
  const std::vector<Status> s = dist::Workers(2).run([&](int r) {
    float x = 1;
    for (int call = 0; call < 2; ++call) OROCHI_RETURN_IF_ERROR(members[r]->all_reduce_sum(&x, 1, DType::kF32));
    const auto start = Clock::now();
    Status st = members[r]->all_reduce_sum(&x, 1, DType::kF32);  // call #2: rank 1 stalls
    elapsed[r] = seconds_since(start);
    later[r] = members[r]->all_reduce_sum(&x, 1, DType::kF32);
    return st;
  });
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(s[r].code(), ErrorCode::kDeadline) << s[r].to_string();
    EXPECT_GE(elapsed[r], 0.29);
    EXPECT_LT(elapsed[r], 2.3);
    for (const char* part : {"'tp'", "all_reduce call #2", "rank 1 did not arrive", "--comm-timeout"})
      EXPECT_NE(s[r].message().find(part), std::string::npos) << part << " missing from " << s[r].message();
    EXPECT_EQ(later[r].code(), ErrorCode::kDeadline);  // the group stays aborted
  }
  EXPECT_EQ(members[0]->synchronize().code(), ErrorCode::kDeadline);
}

TEST(CpuCommDeadline, KilledRankIsNamedByItsPeers) {
  auto group = CpuCommGroup::create(3, faulty(dist::FaultInjection::Kind::kKill, 1, 1));
  auto members = members_of(*group);
  std::vector<double> elapsed(3);
  const auto start = Clock::now();
  const std::vector<Status> s = dist::Workers(3).run([&](int r) {
    std::vector<int64_t> x = {r};
    Status st = members[r]->all_reduce_sum(x.data(), 1, DType::kI64);
    if (st.is_ok())
      st = members[r]->all_to_all(x.data(), {0, 0, 0}, {0, 0, 0}, x.data(), {0, 0, 0}, {0, 0, 0}, DType::kI64);
    elapsed[r] = seconds_since(start);
    return st;
  });
  EXPECT_EQ(s[1].code(), ErrorCode::kInternal);
  EXPECT_NE(s[1].message().find("rank 1 of comm group 'tp' was killed by fault injection"), std::string::npos)
      << s[1].to_string();
  EXPECT_LT(elapsed[1], 0.2);  // dies at once
  for (int r : {0, 2}) {
    EXPECT_EQ(s[r].code(), ErrorCode::kDeadline) << s[r].to_string();
    EXPECT_NE(s[r].message().find("all_to_all call #1"), std::string::npos) << s[r].message();
    EXPECT_NE(s[r].message().find("rank 1 did not arrive (ranks 0, 2 waited)"), std::string::npos) << s[r].message();
    EXPECT_LT(elapsed[r], 2.3);
  }
  EXPECT_EQ(members[1]->synchronize().code(), ErrorCode::kInternal);  // dead ranks stay dead
}

// A rank whose own code failed ends the group, through the group or through its own Comm member
// (all that code deeper down holds), and its peer stops waiting at once.
TEST(CpuCommDeadline, RankErrorAbortsTheGroupWithoutWaitingForTheDeadline) {
  for (bool through_member : {false, true}) {
    SCOPED_TRACE(through_member ? "Comm::abort" : "CpuCommGroup::abort");
    auto group = CpuCommGroup::create(2);  // default deadline: 60 s
    auto members = members_of(*group);
    const auto start = Clock::now();
    double rank0_elapsed = 0;
    const std::vector<Status> s = dist::Workers(2).run([&](int r) {
      if (r == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 0 is waiting by now
        const Status own = invalid_argument("rank 1 could not read its shard");
        if (through_member) members[1]->abort("rank 1 failed: " + own.to_string());
        else group->abort("rank 1 failed: " + own.to_string());
        return own;
      }
      float x = 1;
      Status st = members[0]->all_reduce_sum(&x, 1, DType::kF32);
      rank0_elapsed = seconds_since(start);
      return st;
    });
    EXPECT_EQ(s[0].code(), ErrorCode::kDeadline);
    EXPECT_NE(
        s[0].message().find("'world' was aborted: rank 1 failed: invalid argument: rank 1 could not read its shard"),
        std::string::npos)
        << s[0].to_string();
    EXPECT_LT(rank0_elapsed, 2.0);
    EXPECT_EQ(s[1].code(), ErrorCode::kInvalidArgument);
    float y = 1;
    EXPECT_EQ(members[1]->all_reduce_sum(&y, 1, DType::kF32).code(), ErrorCode::kDeadline);  // stays aborted
  }
}

TEST(Workers, ExceptionsBecomeInternalErrors) {
  const std::vector<Status> s = dist::Workers(3).run([](int r) -> Status {
    OROCHI_CHECK(r != 2, "rank two breaks an invariant");
    return r == 1 ? invalid_argument("bad") : Status::ok();
  });
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(s[0].is_ok());
  EXPECT_EQ(s[1].code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s[2].code(), ErrorCode::kInternal);
  EXPECT_NE(s[2].message().find("rank two breaks an invariant"), std::string::npos) << s[2].to_string();
}

}  // namespace
}  // namespace orochi
