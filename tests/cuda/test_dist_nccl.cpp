// NCCL collectives on two GPUs of this process, one worker thread per GPU as in a run: results
// against host arithmetic, bad requests, and the deadline machinery (a stalled or killed rank ends
// every rank's call within deadline + 2 s, and the process can build a fresh group afterwards).
// Skips without two GPUs.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <latch>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "dist/nccl/nccl_comm.h"
#include "dist_test_support.h"

namespace orochi {
namespace {

using dist::Comm;
using dist::CommOptions;
using dist::FaultInjection;
using dist::NcclGroup;
using testing::Clock;
using testing::contains;
using testing::DeviceBytes;
using testing::kRanks;
using testing::since;
using std::chrono::milliseconds;
constexpr milliseconds kShortDeadline{500};
constexpr milliseconds kAbortSlack{2000};  // the run must end within deadline + 2 s

class DistNccl : public testing::TwoGpuTest {
 protected:
  std::shared_ptr<NcclGroup> make_group(CommOptions options = {}) {
    auto group = NcclGroup::create({0, 1}, streams_, std::move(options));
    EXPECT_TRUE(group.has_value()) << group.status().to_string();
    return group.has_value() ? *group : nullptr;
  }

  void run_ranks(NcclGroup& group, const std::function<void(Comm&, cudaStream_t)>& body) {
    std::vector<std::unique_ptr<Comm>> comms;
    for (int r = 0; r < kRanks; ++r) comms.push_back(group.member(r));
    TwoGpuTest::run_ranks(comms, body);
  }

  // After an abort the process must still communicate: a new group, a sum and a heartbeat.
  void expect_fresh_group_works() {
    std::shared_ptr<NcclGroup> group = make_group();
    ASSERT_NE(group, nullptr);
    constexpr int64_t n = 257;
    std::vector<std::vector<float>> sums(kRanks);
    std::vector<int64_t> minima(kRanks, 0);
    run_ranks(*group, [&](Comm& comm, cudaStream_t stream) {
      DeviceBytes data(n * sizeof(float), stream);
      data.upload(std::vector<float>(n, static_cast<float>(comm.rank() + 1)));
      EXPECT_TRUE(comm.all_reduce_sum(data.get(), n, DType::kF32).is_ok());
      EXPECT_TRUE(comm.synchronize().is_ok());
      sums[comm.rank()] = data.download<float>();
      Expected<int64_t> minimum = comm.all_reduce_min(10 + comm.rank());
      EXPECT_TRUE(minimum.has_value()) << minimum.status().to_string();
      if (minimum) minima[comm.rank()] = *minimum;
    });
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_EQ(sums[r], std::vector<float>(n, 3.0f)) << "rank " << r;  // 1 + 2
      EXPECT_EQ(minima[r], 10) << "rank " << r;
    }
  }

  // What one rank saw at the faulty call #1 (call #0 is a healthy warm-up sum on both ranks).
  struct FaultOutcome {
    Status warmup, faulty, later;
    milliseconds took{0};
  };

  std::vector<FaultOutcome> run_faulty_call(NcclGroup& group) {
    std::vector<FaultOutcome> outcomes(kRanks);
    constexpr int64_t n = 4096;
    run_ranks(group, [&](Comm& comm, cudaStream_t stream) {
      FaultOutcome& out = outcomes[comm.rank()];
      DeviceBytes data(n * sizeof(float), stream);
      data.upload(std::vector<float>(n, 1.0f));
      out.warmup = comm.all_reduce_sum(data.get(), n, DType::kF32);
      if (out.warmup.is_ok()) out.warmup = comm.synchronize();
      const auto start = Clock::now();
      out.faulty = comm.all_reduce_sum(data.get(), n, DType::kF32);
      if (out.faulty.is_ok()) out.faulty = comm.synchronize();
      out.took = since(start);
      out.later = comm.synchronize();
    });
    return outcomes;
  }
};

TEST_F(DistNccl, AllReduceSumsBf16AndF32LikeTheHost) {
  std::shared_ptr<NcclGroup> group = make_group();
  ASSERT_NE(group, nullptr);
  constexpr int64_t n = 1001;  // not a multiple of any vector width
  // bf16: small integers, so every sum is exact; f32: arbitrary values, a + b rounds the same way.
  auto bf16_value = [](int64_t i, int r) { return static_cast<float>((i * 7 + r * 13) % 31 - 15); };
  auto f32_value = [](int64_t i, int r) {
    return 3.0f * std::sin(0.37f * static_cast<float>(i) + static_cast<float>(r));
  };
  std::vector<std::vector<uint16_t>> bf16_out(kRanks);
  std::vector<std::vector<float>> f32_out(kRanks);
  run_ranks(*group, [&](Comm& comm, cudaStream_t stream) {
    const int r = comm.rank();
    std::vector<uint16_t> bf16_in(n);
    std::vector<float> f32_in(n);
    for (int64_t i = 0; i < n; ++i) {
      bf16_in[i] = f32_to_bf16(bf16_value(i, r));
      f32_in[i] = f32_value(i, r);
    }
    DeviceBytes bf16(n * sizeof(uint16_t), stream), f32(n * sizeof(float), stream);
    bf16.upload(bf16_in);
    f32.upload(f32_in);
    EXPECT_TRUE(comm.all_reduce_sum(bf16.get(), n, DType::kBF16).is_ok());
    EXPECT_TRUE(comm.all_reduce_sum(f32.get(), n, DType::kF32).is_ok());
    const Status synced = comm.synchronize();
    EXPECT_TRUE(synced.is_ok()) << synced.to_string();
    bf16_out[r] = bf16.download<uint16_t>();
    f32_out[r] = f32.download<float>();
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(bf16_out[r].size(), static_cast<size_t>(n));
    ASSERT_EQ(f32_out[r].size(), static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bf16_to_f32(bf16_out[r][i]), bf16_value(i, 0) + bf16_value(i, 1)) << "rank " << r << " element " << i;
      const float want = f32_value(i, 0) + f32_value(i, 1);
      ASSERT_NEAR(f32_out[r][i], want, 1e-6f * (1.0f + std::fabs(want))) << "rank " << r << " element " << i;
    }
  }
}

TEST_F(DistNccl, AllGatherPlacesEveryRankAtItsOffset) {
  std::shared_ptr<NcclGroup> group = make_group();
  ASSERT_NE(group, nullptr);
  constexpr int64_t n = 333;
  std::vector<std::vector<int32_t>> gathered(kRanks);
  run_ranks(*group, [&](Comm& comm, cudaStream_t stream) {
    std::vector<int32_t> mine(n);
    for (int64_t i = 0; i < n; ++i) mine[i] = comm.rank() * 100000 + static_cast<int32_t>(i);
    DeviceBytes send(n * sizeof(int32_t), stream), recv(kRanks * n * sizeof(int32_t), stream);
    send.upload(mine);
    recv.upload(std::vector<int32_t>(kRanks * n, -1));
    EXPECT_TRUE(comm.all_gather(send.get(), recv.get(), n, DType::kI32).is_ok());
    EXPECT_TRUE(comm.synchronize().is_ok());
    gathered[comm.rank()] = recv.download<int32_t>();
  });
  std::vector<int32_t> want(kRanks * n);
  for (int r = 0; r < kRanks; ++r)
    for (int64_t i = 0; i < n; ++i) want[r * n + i] = r * 100000 + static_cast<int32_t>(i);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(gathered[r], want) << "rank " << r;
}

// Element k of what rank `from` sends rank `to`.
int32_t a2a_value(int from, int to, int64_t k) { return from * 1000 + to * 100 + static_cast<int32_t>(k); }

TEST_F(DistNccl, UnevenAllToAllMatchesTheHostExpectation) {
  std::shared_ptr<NcclGroup> group = make_group();
  ASSERT_NE(group, nullptr);
  // counts[round][from][to]; the second round has an empty transfer (skipped, not sent).
  const std::vector<std::vector<std::vector<int64_t>>> counts = {{{3, 5}, {6, 4}}, {{2, 0}, {7, 1}}};
  // Send blocks in rank order with a 1-element gap; receive blocks in reverse order with a 2-element
  // gap, so offsets matter and untouched elements must keep their sentinel.
  auto send_offsets = [&](size_t round, int from) {
    std::vector<int64_t> offsets(kRanks);
    int64_t at = 0;
    for (int to = 0; to < kRanks; ++to) {
      offsets[to] = at;
      at += counts[round][from][to] + 1;
    }
    return std::make_pair(offsets, at);
  };
  auto recv_offsets = [&](size_t round, int to) {
    std::vector<int64_t> offsets(kRanks);
    int64_t at = 0;
    for (int from = kRanks - 1; from >= 0; --from) {
      offsets[from] = at;
      at += counts[round][from][to] + 2;
    }
    return std::make_pair(offsets, at);
  };
  std::vector<std::vector<std::vector<int32_t>>> received(counts.size(), std::vector<std::vector<int32_t>>(kRanks));
  run_ranks(*group, [&](Comm& comm, cudaStream_t stream) {
    const int r = comm.rank();
    for (size_t round = 0; round < counts.size(); ++round) {
      const auto [s_offsets, s_total] = send_offsets(round, r);
      const auto [r_offsets, r_total] = recv_offsets(round, r);
      std::vector<int64_t> s_counts(kRanks), r_counts(kRanks);
      std::vector<int32_t> send_host(s_total, -7);
      for (int j = 0; j < kRanks; ++j) {
        s_counts[j] = counts[round][r][j];
        r_counts[j] = counts[round][j][r];
        for (int64_t k = 0; k < s_counts[j]; ++k) send_host[s_offsets[j] + k] = a2a_value(r, j, k);
      }
      DeviceBytes send(s_total * sizeof(int32_t), stream), recv(r_total * sizeof(int32_t), stream);
      send.upload(send_host);
      recv.upload(std::vector<int32_t>(r_total, -1));
      const Status status =
          comm.all_to_all(send.get(), s_counts, s_offsets, recv.get(), r_counts, r_offsets, DType::kI32);
      EXPECT_TRUE(status.is_ok()) << status.to_string();
      EXPECT_TRUE(comm.synchronize().is_ok());
      received[round][r] = recv.download<int32_t>();
    }
  });
  for (size_t round = 0; round < counts.size(); ++round)
    for (int to = 0; to < kRanks; ++to) {
      const auto [offsets, total] = recv_offsets(round, to);
      std::vector<int32_t> want(total, -1);
      for (int from = 0; from < kRanks; ++from)
        for (int64_t k = 0; k < counts[round][from][to]; ++k) want[offsets[from] + k] = a2a_value(from, to, k);
      EXPECT_EQ(received[round][to], want) << "round " << round << " rank " << to;
    }
}

TEST_F(DistNccl, HeartbeatReturnsTheMinimumToEveryRank) {
  std::shared_ptr<NcclGroup> group = make_group();
  ASSERT_NE(group, nullptr);
  const std::vector<std::vector<int64_t>> values = {
      {5, 3}, {-7, 100}, {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min() + 1}};
  std::vector<std::vector<int64_t>> got(kRanks);
  run_ranks(*group, [&](Comm& comm, cudaStream_t) {
    for (const auto& round : values) {
      Expected<int64_t> minimum = comm.all_reduce_min(round[comm.rank()]);
      EXPECT_TRUE(minimum.has_value()) << minimum.status().to_string();
      got[comm.rank()].push_back(minimum.has_value() ? *minimum : 0);
    }
  });
  const std::vector<int64_t> want = {3, -7, std::numeric_limits<int64_t>::min() + 1};
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(got[r], want) << "rank " << r;
}

TEST_F(DistNccl, StalledRankEndsEveryRanksCallWithTheDeadline) {
  CommOptions options;
  options.name = "tp";
  options.deadline = kShortDeadline;
  options.fault = {FaultInjection::Kind::kStall, /*rank=*/1, /*at_call=*/1};
  std::shared_ptr<NcclGroup> group = make_group(options);
  ASSERT_NE(group, nullptr);
  const auto outcomes = run_faulty_call(*group);
  for (int r = 0; r < kRanks; ++r) {
    const FaultOutcome& out = outcomes[r];
    EXPECT_TRUE(out.warmup.is_ok()) << "rank " << r << ": " << out.warmup.to_string();
    EXPECT_EQ(out.faulty.code(), ErrorCode::kDeadline) << "rank " << r << ": " << out.faulty.to_string();
    const std::string& message = out.faulty.message();
    EXPECT_TRUE(contains(message, "comm group 'tp'")) << message;
    EXPECT_TRUE(contains(message, "all_reduce call #1")) << message;
    EXPECT_TRUE(contains(message, "rank 1 did not arrive")) << message;
    EXPECT_TRUE(contains(message, "--comm-timeout")) << message;
    EXPECT_GE(out.took, kShortDeadline - milliseconds(100)) << "rank " << r << " failed before the deadline";
    EXPECT_LT(out.took, kShortDeadline + kAbortSlack) << "rank " << r;
    EXPECT_EQ(out.later.code(), ErrorCode::kDeadline) << "rank " << r << ": later calls fail too";
    std::printf("[nccl] rank %d stalled-peer call returned after %lld ms: %s\n", r,
                static_cast<long long>(out.took.count()), out.faulty.to_string().c_str());
  }
  EXPECT_EQ(group->health().code(), ErrorCode::kDeadline);
  group.reset();
  expect_fresh_group_works();
}

TEST_F(DistNccl, KilledRankFailsItsPeerAtTheDeadline) {
  CommOptions options;
  options.name = "tp";
  options.deadline = kShortDeadline;
  options.fault = {FaultInjection::Kind::kKill, /*rank=*/1, /*at_call=*/1};
  std::shared_ptr<NcclGroup> group = make_group(options);
  ASSERT_NE(group, nullptr);
  const auto outcomes = run_faulty_call(*group);
  const FaultOutcome& killed = outcomes[1];
  EXPECT_TRUE(killed.warmup.is_ok()) << killed.warmup.to_string();
  EXPECT_EQ(killed.faulty.code(), ErrorCode::kInternal) << killed.faulty.to_string();
  EXPECT_TRUE(contains(killed.faulty.message(), "rank 1 of comm group 'tp' was killed by fault injection"))
      << killed.faulty.message();
  EXPECT_LT(killed.took, kShortDeadline) << "the killed rank returns at once";
  EXPECT_EQ(killed.later.code(), ErrorCode::kInternal) << "a killed rank stays dead";

  const FaultOutcome& peer = outcomes[0];
  EXPECT_TRUE(peer.warmup.is_ok()) << peer.warmup.to_string();
  EXPECT_EQ(peer.faulty.code(), ErrorCode::kDeadline) << peer.faulty.to_string();
  EXPECT_TRUE(contains(peer.faulty.message(), "all_reduce call #1")) << peer.faulty.message();
  EXPECT_TRUE(contains(peer.faulty.message(), "rank 1 did not arrive (rank 0 waited)")) << peer.faulty.message();
  EXPECT_GE(peer.took, kShortDeadline - milliseconds(100));
  EXPECT_LT(peer.took, kShortDeadline + kAbortSlack);
  std::printf("[nccl] peer of the killed rank returned after %lld ms: %s\n", static_cast<long long>(peer.took.count()),
              peer.faulty.to_string().c_str());
  group.reset();
  expect_fresh_group_works();
}

TEST_F(DistNccl, BadArgumentsFailEveryRankWithoutWaitingForTheDeadline) {
  std::shared_ptr<NcclGroup> group = make_group();  // the default 60 s deadline
  ASSERT_NE(group, nullptr);
  constexpr int64_t n = 64;
  std::vector<Status> warmup(kRanks), bad(kRanks);
  std::vector<milliseconds> took(kRanks);
  std::latch both_warm(kRanks);
  run_ranks(*group, [&](Comm& comm, cudaStream_t stream) {
    const int r = comm.rank();
    DeviceBytes send(2 * n * sizeof(float), stream), recv(2 * n * sizeof(float), stream);
    send.upload(std::vector<float>(2 * n, 1.0f));
    const std::vector<int64_t> counts = {n, n}, offsets = {0, n};
    warmup[r] = comm.all_to_all(send.get(), counts, offsets, recv.get(), counts, offsets, DType::kF32);
    if (warmup[r].is_ok()) warmup[r] = comm.synchronize();
    // Every rank finished its warm-up before either makes the bad call (which aborts the group);
    // a host latch, as a heartbeat's result could still be on its way back when a peer aborts.
    both_warm.arrive_and_wait();
    const auto start = Clock::now();
    // Rank 0 passes one count for two ranks; rank 1's call is fine and must not wait 60 s.
    const std::vector<int64_t> wrong = r == 0 ? std::vector<int64_t>{n} : counts;
    bad[r] = comm.all_to_all(send.get(), wrong, offsets, recv.get(), counts, offsets, DType::kF32);
    if (bad[r].is_ok()) bad[r] = comm.synchronize();
    took[r] = since(start);
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(warmup[r].is_ok()) << "rank " << r << ": " << warmup[r].to_string();
    EXPECT_EQ(bad[r].code(), ErrorCode::kInvalidArgument) << "rank " << r << ": " << bad[r].to_string();
    EXPECT_TRUE(contains(bad[r].message(), "rank 0 called all_to_all with bad arguments")) << bad[r].message();
    EXPECT_LT(took[r], milliseconds(10'000)) << "rank " << r;
  }
}

TEST_F(DistNccl, AnUnsummableTypeFailsEveryRank) {
  std::shared_ptr<NcclGroup> group = make_group();
  ASSERT_NE(group, nullptr);
  constexpr int64_t n = 64;
  std::vector<Status> warmup(kRanks), bad(kRanks), later(kRanks);
  std::latch both_warm(kRanks);
  run_ranks(*group, [&](Comm& comm, cudaStream_t stream) {
    const int r = comm.rank();
    DeviceBytes data(n * sizeof(float), stream);
    data.upload(std::vector<float>(n, 1.0f));
    warmup[r] = comm.all_reduce_sum(data.get(), n, DType::kF32);
    if (warmup[r].is_ok()) warmup[r] = comm.synchronize();
    both_warm.arrive_and_wait();  // both warmed up before the bad call aborts the group
    // Rank 1 sums bytes, which no rank can do; rank 0's valid call fails with the same cause.
    bad[r] = comm.all_reduce_sum(data.get(), n, r == 1 ? DType::kU8 : DType::kF32);
    if (bad[r].is_ok()) bad[r] = comm.synchronize();
    later[r] = comm.all_reduce_sum(data.get(), n, DType::kF32);
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(warmup[r].is_ok()) << "rank " << r << ": " << warmup[r].to_string();
    // Rank 0's own call was valid and may already be on its stream when rank 1's refusal aborts
    // the group, so its code may be the abort's; the cause it names must be rank 1's.
    EXPECT_FALSE(bad[r].is_ok()) << "rank " << r;
    if (r == 1) {
      EXPECT_EQ(bad[r].code(), ErrorCode::kInvalidArgument) << bad[r].to_string();
    }
    EXPECT_TRUE(contains(bad[r].message(), "rank 1 called all_reduce with bad arguments: cannot sum u8"))
        << bad[r].message();
    EXPECT_FALSE(later[r].is_ok()) << "rank " << r << ": the group stays failed";
  }
}

TEST_F(DistNccl, BadGroupRequestsAreStatusesWithAdvice) {
  auto expect_invalid = [&](const std::vector<int>& devices, const std::vector<cudaStream_t>& streams,
                            const std::string& part) {
    auto group = NcclGroup::create(devices, streams);
    ASSERT_FALSE(group.has_value()) << part;
    EXPECT_EQ(group.status().code(), ErrorCode::kInvalidArgument) << group.status().to_string();
    EXPECT_TRUE(contains(group.status().message(), part)) << group.status().message();
  };
  expect_invalid({}, {}, "no GPUs given");
  expect_invalid({0, 1}, {streams_[0]}, "2 GPUs but 1 streams");
  expect_invalid({0, 0}, {streams_[0], streams_[0]}, "GPU 0 is listed twice");
  expect_invalid({0, 999}, {streams_[0], streams_[1]}, "GPU 999 requested");
  expect_invalid({0, 1}, {streams_[0], nullptr}, "default stream");
  expect_invalid({0, 1}, {streams_[1], streams_[0]}, "its stream belongs to GPU 1");
  CommOptions no_deadline;
  no_deadline.deadline = milliseconds(0);
  auto group = NcclGroup::create({0, 1}, streams_, no_deadline);
  ASSERT_FALSE(group.has_value());
  EXPECT_TRUE(contains(group.status().message(), "--comm-timeout")) << group.status().message();
}

}  // namespace
}  // namespace orochi
