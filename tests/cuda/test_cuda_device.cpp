#include <gtest/gtest.h>

#include "backends/cuda/device.h"

namespace orochi {
namespace {

TEST(CudaDevice, ListsDevicesOrSaysWhyNot) {
  Expected<std::vector<cuda::DeviceInfo>> devices = cuda::list_devices();
  if (!devices) {
    EXPECT_EQ(devices.status().code(), ErrorCode::kNotFound);
    GTEST_SKIP() << devices.status().to_string();
  }
  ASSERT_FALSE(devices->empty());
  for (const auto& d : *devices) {
    EXPECT_GT(d.total_bytes, 0u);
    std::printf("cuda:%d %s sm_%d%d, %d SMs, %.1f GiB\n", d.index, d.name.c_str(), d.sm_major, d.sm_minor,
                d.multiprocessors, d.total_bytes / 1073741824.0);
  }
}

}  // namespace
}  // namespace orochi
