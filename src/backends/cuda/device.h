// The GPUs this process can see.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  uint64_t total_bytes = 0, free_bytes = 0;
};

// Every visible device; an error (with advice) when there is no driver or no GPU.
Expected<std::vector<DeviceInfo>> list_devices();

// Lets GPU `device` read and write GPU `peer`'s memory directly (NVLink or PCIe P2P); leaves
// `device` current. Access enabled earlier (by another group, tier or measurement) is fine.
Status enable_peer_access(int device, int peer);

}  // namespace orochi::cuda
