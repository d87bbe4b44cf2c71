// Copy-engine collectives (dist/cuda/peer_copy_comm.h) on two GPUs: uneven all_to_all and
// all_gather against host expectations, the heartbeat, refusals, and a stalled rank ending both
// ranks' calls with an error naming it within deadline + 2 s, and paced pushes (OROCHI_PEER_PACE).
// Skips without two GPUs, except the pace parser's test.
#include <gtest/gtest.h>

#include <cstdlib>

#include "dist/cuda/peer_copy_comm.h"
#include "dist_test_support.h"

namespace orochi {
namespace {

using dist::Comm;
using dist::CommOptions;
using dist::PeerCopyGroup;
using testing::Clock;
using testing::contains;
using testing::DeviceBytes;
using testing::kRanks;
using testing::since;
using std::chrono::milliseconds;

class DistPeerCopy : public testing::TwoGpuTest {
 protected:
  std::vector<std::unique_ptr<Comm>> members(CommOptions options = {}, dist::PeerCopyPace pace = {}) {
    std::vector<std::unique_ptr<Comm>> comms;
    if (!PeerCopyGroup::supported({0, 1})) {
      ADD_FAILURE() << "the two GPUs have no peer access";
      return comms;
    }
    auto group = PeerCopyGroup::create({0, 1}, streams_, std::move(options), pace);
    EXPECT_TRUE(group.has_value()) << group.status().to_string();
    if (group)
      for (int r = 0; r < kRanks; ++r) comms.push_back((*group)->member(r));
    return comms;
  }
};

// Rank r sends 3 + r + 2j elements (value 100 r + j) to rank j, twice in a row (buffer reuse).
TEST_F(DistPeerCopy, UnevenAllToAllMatchesTheHost) {
  auto comms = members();
  ASSERT_EQ(comms.size(), 2u);
  auto count = [](int from, int to) { return static_cast<int64_t>(3 + from + 2 * to); };
  std::vector<std::vector<float>> got(kRanks);
  run_ranks(comms, [&](Comm& comm, cudaStream_t stream) {
    const int r = comm.rank();
    std::vector<int64_t> sc(kRanks), so(kRanks), rc(kRanks), ro(kRanks);
    std::vector<float> send;
    int64_t total_recv = 0;
    for (int j = 0; j < kRanks; ++j) {
      so[j] = static_cast<int64_t>(send.size()) + 5;  // gaps between the pieces
      send.resize(so[j] + count(r, j), -1.0f);
      std::fill(send.begin() + so[j], send.end(), 100.0f * r + j);
      sc[j] = count(r, j), rc[j] = count(j, r), ro[j] = total_recv, total_recv += rc[j];
    }
    DeviceBytes d_send(send.size() * sizeof(float), stream), d_recv(total_recv * sizeof(float), stream);
    d_send.upload(send);
    for (int round = 0; round < 2; ++round) {
      Status s = comm.all_to_all(d_send.get(), sc, so, d_recv.get(), rc, ro, DType::kF32);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_TRUE(comm.synchronize().is_ok());
    }
    got[r] = d_recv.download<float>();
  });
  for (int r = 0; r < kRanks; ++r) {
    std::vector<float> want;
    for (int j = 0; j < kRanks; ++j) want.insert(want.end(), count(j, r), 100.0f * j + r);
    EXPECT_EQ(got[r], want) << "rank " << r;
  }
}

TEST_F(DistPeerCopy, AllGatherAndHeartbeat) {
  auto comms = members();
  ASSERT_EQ(comms.size(), 2u);
  constexpr int64_t n = 1000;
  std::vector<std::vector<int32_t>> got(kRanks);
  std::vector<int64_t> minima(kRanks);
  run_ranks(comms, [&](Comm& comm, cudaStream_t stream) {
    DeviceBytes send(n * sizeof(int32_t), stream), recv(kRanks * n * sizeof(int32_t), stream);
    send.upload(std::vector<int32_t>(n, 7 + comm.rank()));
    EXPECT_TRUE(comm.all_gather(send.get(), recv.get(), n, DType::kI32).is_ok());
    EXPECT_TRUE(comm.synchronize().is_ok());
    got[comm.rank()] = recv.download<int32_t>();
    Expected<int64_t> low = comm.all_reduce_min(40 - comm.rank());
    EXPECT_TRUE(low.has_value()) << low.status().to_string();
    minima[comm.rank()] = low.has_value() ? *low : 0;
    EXPECT_EQ(comm.all_reduce_sum(send.get(), n, DType::kI32).code(), ErrorCode::kUnsupported);
  });
  std::vector<int32_t> want(n, 7);
  want.insert(want.end(), n, 8);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(got[r], want) << "rank " << r;
    EXPECT_EQ(minima[r], 39) << "rank " << r;
  }
}

// The peer-pace switch: pushes in 1 MB pieces with 20 us host pauses between them deliver the same
// bytes (a 4 MB + 123-float piece per rank: four full pieces and a partial one).
TEST_F(DistPeerCopy, PacedAllGatherMatchesTheHost) {
  auto comms = members({}, dist::PeerCopyPace{size_t{1} << 20, 20});
  ASSERT_EQ(comms.size(), 2u);
  constexpr int64_t n = (int64_t{1} << 20) + 123;
  auto value = [](int rank, int64_t i) { return static_cast<float>(rank * 2'000'000 + i); };  // exact in f32
  std::vector<std::vector<float>> got(kRanks);
  run_ranks(comms, [&](Comm& comm, cudaStream_t stream) {
    std::vector<float> send(n);
    for (int64_t i = 0; i < n; ++i) send[i] = value(comm.rank(), i);
    DeviceBytes d_send(n * sizeof(float), stream), d_recv(kRanks * n * sizeof(float), stream);
    d_send.upload(send);
    Status s = comm.all_gather(d_send.get(), d_recv.get(), n, DType::kF32);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_TRUE(comm.synchronize().is_ok());
    got[comm.rank()] = d_recv.download<float>();
  });
  std::vector<float> want;
  for (int j = 0; j < kRanks; ++j)
    for (int64_t i = 0; i < n; ++i) want.push_back(value(j, i));
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(got[r] == want) << "rank " << r;
}

TEST_F(DistPeerCopy, CountsThatDisagreeFailEveryRank) {
  auto comms = members();
  ASSERT_EQ(comms.size(), 2u);
  std::vector<Status> result(kRanks);
  // The buffers outlive both ranks' calls: rank 1's copy into rank 0 may still be in flight when
  // rank 0 returns its refusal.
  std::vector<std::unique_ptr<DeviceBytes>> bufs;
  for (int d = 0; d < kRanks; ++d) {
    ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
    bufs.push_back(std::make_unique<DeviceBytes>(128 * sizeof(float), streams_[d]));
  }
  run_ranks(comms, [&](Comm& comm, cudaStream_t) {
    const int r = comm.rank();
    char* base = static_cast<char*>(bufs[r]->get());
    const std::vector<int64_t> sc = {8, r == 0 ? 9 : 8}, off = {0, 16};  // rank 0 sends 9, rank 1 expects 8
    result[r] = comm.all_to_all(base, sc, off, base + 64 * sizeof(float), {8, 8}, off, DType::kF32);
  });
  for (int d = 0; d < kRanks; ++d) {
    ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(streams_[d]), cudaSuccess);
  }
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(result[r].code(), ErrorCode::kInvalidArgument) << result[r].to_string();
    EXPECT_TRUE(contains(result[r].message(), "sends 9 elements to rank 1")) << result[r].message();
  }
}

TEST_F(DistPeerCopy, AStalledRankEndsBothCallsNamingIt) {
  CommOptions options;
  options.name = "sp";
  options.deadline = milliseconds(500);
  options.fault = {dist::FaultInjection::Kind::kStall, 1, 1};
  auto comms = members(options);
  ASSERT_EQ(comms.size(), 2u);
  std::vector<Status> first(kRanks), faulty(kRanks);
  std::vector<milliseconds> took(kRanks);
  run_ranks(comms, [&](Comm& comm, cudaStream_t stream) {
    DeviceBytes send(2 * 64 * sizeof(float), stream), recv(2 * 64 * sizeof(float), stream);
    const std::vector<int64_t> counts = {64, 64}, offsets = {0, 64};
    first[comm.rank()] = comm.all_to_all(send.get(), counts, offsets, recv.get(), counts, offsets, DType::kF32);
    const auto start = Clock::now();
    faulty[comm.rank()] = comm.all_to_all(send.get(), counts, offsets, recv.get(), counts, offsets, DType::kF32);
    took[comm.rank()] = since(start);
  });
  for (int r = 0; r < kRanks; ++r) {
    std::printf("[peer copy] rank %d stalled-peer call returned after %lld ms: %s\n", r,
                static_cast<long long>(took[r].count()), faulty[r].to_string().c_str());
    EXPECT_TRUE(first[r].is_ok()) << first[r].to_string();
    EXPECT_EQ(faulty[r].code(), ErrorCode::kDeadline) << faulty[r].to_string();
    EXPECT_TRUE(contains(faulty[r].message(), "all_to_all call #1")) << faulty[r].message();
    EXPECT_TRUE(contains(faulty[r].message(), "rank 1 did not arrive")) << faulty[r].message();
    EXPECT_LT(took[r], milliseconds(500 + 2000)) << "rank " << r;
  }
}

}  // namespace
}  // namespace orochi
