// DeviceArena (one allocation, aligned bump allocation, mark/reset, peak, exhaustion as a Status),
// the host <-> device copies, and the staged uploader (pinned buffers, pieces, conversions).
#include <cstdint>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/staged_upload.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

class CudaMemory : public GpuTest {
 protected:
  CudaMemory() : GpuTest(size_t{1} << 20) {}  // 1 MiB: small enough to exhaust on purpose
};

TEST_F(CudaMemory, BumpAllocationIsAlignedAndMarksAreReused) {
  EXPECT_EQ(arena().capacity(), size_t{1} << 20);
  ASSERT_OK_AND_ASSIGN(void* a, arena().allocate(1000));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % cuda::DeviceArena::kAlignment, 0u);
  EXPECT_EQ(arena().used(), 1024u);  // rounded up to the 256-byte alignment
  const size_t mark = arena().mark();
  ASSERT_OK_AND_ASSIGN(void* b, arena().allocate(1));
  EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 1024);
  ASSERT_OK_AND_ASSIGN(void* c, arena().allocate(4096));
  EXPECT_EQ(arena().peak(), 1024u + 256u + 4096u);
  arena().reset(mark);
  EXPECT_EQ(arena().used(), 1024u);
  ASSERT_OK_AND_ASSIGN(void* again, arena().allocate(10));
  EXPECT_EQ(again, b);  // the released scratch is handed out again
  EXPECT_EQ(arena().peak(), 1024u + 256u + 4096u);  // the peak remembers the high-water mark
  (void)c;
}

TEST_F(CudaMemory, ExhaustionIsAStatusNamingRequestedAndFreeBytes) {
  ASSERT_OK_AND_ASSIGN(void* a, arena().allocate(size_t{3} << 18));  // 768 KiB of 1 MiB
  (void)a;
  const size_t used = arena().used();
  Expected<void*> too_big = arena().allocate(size_t{1} << 19);  // 512 KiB more
  ASSERT_FALSE(too_big.has_value());
  const std::string message = too_big.status().message();
  EXPECT_NE(message.find("requested 524288 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("262144 bytes"), std::string::npos) << message;  // what is free
  EXPECT_EQ(arena().used(), used);  // a failed request takes nothing
  Expected<Tensor> t = arena().tensor({1024, 1024}, DType::kF32);
  EXPECT_FALSE(t.has_value());
  std::printf("[cuda-op] arena exhaustion message: %s\n", message.c_str());
}

TEST_F(CudaMemory, ImpossibleArenaIsAStatusNotACrash) {
  auto huge = cuda::DeviceArena::create(0, size_t{1} << 50, "huge arena");  // 1 PiB
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.status().message().find("huge arena"), std::string::npos) << huge.status().to_string();
  // The failed cudaMalloc must not poison later calls.
  ASSERT_OK_AND_ASSIGN(void* p, arena().allocate(256));
  EXPECT_EQ(cudaMemsetAsync(p, 0, 256, stream()), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
}

TEST_F(CudaMemory, ArenaTensorsAreCudaTensorsThatKeepTheArenaAlive) {
  ASSERT_OK_AND_ASSIGN(Tensor t, arena().tensor({3, 5}, DType::kBF16));
  EXPECT_EQ(t.device().kind, DeviceKind::kCUDA);
  EXPECT_EQ(t.device().index, 0);
  EXPECT_TRUE(t.is_contiguous());
  Tensor host = random_bf16_values({3, 5});
  ASSERT_STATUS_OK(cuda::upload_into(host, t, stream()));
  arena_.reset();  // the test's own reference goes; the tensor still holds the arena
  ASSERT_OK_AND_ASSIGN(Tensor back, cuda::download(t, stream()));
  EXPECT_TENSOR_CLOSE(back.to(DType::kF32), host, 0.0);
}

TEST_F(CudaMemory, UploadConvertsAndDownloadRoundTrips) {
  Tensor x = random_f32_values({17, 9}, 3.0f);
  ASSERT_OK_AND_ASSIGN(Tensor as_f32, cuda::upload(x, arena(), DType::kF32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor as_bf16, cuda::upload(x, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor f32_back, cuda::download(as_f32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor bf16_back, cuda::download(as_bf16, stream()));
  EXPECT_EQ(bf16_back.dtype(), DType::kBF16);
  EXPECT_TENSOR_CLOSE(f32_back, x, 0.0);
  EXPECT_TENSOR_CLOSE(bf16_back.to(DType::kF32), x.to(DType::kBF16).to(DType::kF32), 0.0);  // same RNE as core
  // bf16 host -> f32 device widens exactly.
  ASSERT_OK_AND_ASSIGN(Tensor widened, cuda::upload(x.to(DType::kBF16), arena(), DType::kF32, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor widened_back, cuda::download(widened, stream()));
  EXPECT_TENSOR_CLOSE(widened_back, x.to(DType::kBF16).to(DType::kF32), 0.0);
  // Index vectors copy as they are.
  Tensor idx = Tensor::from_ints({5, 0, 3, 1 << 20}, {4});
  ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor idx_back, cuda::download(didx, stream()));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(idx_back.data<int64_t>()[i], idx.data<int64_t>()[i]);
  EXPECT_THROW((void)cuda::upload(idx, arena(), DType::kF32, stream()), InternalError);  // no int -> float
}

TEST_F(CudaMemory, StagedUploadEqualsThePlainUploadAcrossPieces) {
  // 4 KiB buffers, 2 of them, 3 threads: every tensor below crosses several pieces and buffers
  // are reused while earlier pieces may still travel.
  ASSERT_OK_AND_ASSIGN(auto up, cuda::StagedUploader::create(0, stream(), 4096, 2, 3));
  const Tensor a = random_f32_values({37, 129}, 2.0f);          // f32 -> bf16 (converted)
  const Tensor b = random_f32_values({3000}, 1.0f).to(DType::kBF16);  // bf16 -> bf16 (copied)
  const Tensor c = random_f32_values({64, 40}, 1.0f).slice(1, 3, 35);  // a strided view, f32 -> f32
  ASSERT_OK_AND_ASSIGN(Tensor da, arena().tensor({37, 129}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor db, arena().tensor({3000}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor dc, arena().tensor({64, 32}, DType::kF32));
  ASSERT_TRUE(up->add(a, da).is_ok());
  ASSERT_TRUE(up->add(b, db).is_ok());
  ASSERT_TRUE(up->add(c, dc).is_ok());
  ASSERT_TRUE(up->finish().is_ok());
  EXPECT_EQ(up->stats().bytes, 37u * 129 * 2 + 3000 * 2 + 64 * 32 * 4);
  ASSERT_OK_AND_ASSIGN(Tensor a_back, cuda::download(da, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor b_back, cuda::download(db, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor c_back, cuda::download(dc, stream()));
  EXPECT_TENSOR_CLOSE(a_back.to(DType::kF32), a.to(DType::kBF16).to(DType::kF32), 0.0);  // same RNE as core
  EXPECT_TENSOR_CLOSE(b_back.to(DType::kF32), b.to(DType::kF32), 0.0);
  EXPECT_TENSOR_CLOSE(c_back, c.contiguous(), 0.0);
  EXPECT_THROW((void)up->add(a, db), InternalError);  // shapes differ
  EXPECT_FALSE(cuda::StagedUploader::create(0, stream(), 16, 2, 1).has_value());  // buffers too small
}

}  // namespace
}  // namespace orochi
