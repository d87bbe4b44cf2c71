// Host helpers of the sm_90a kernels: TMA descriptors (CUtensorMap) for bf16 (and e4m3 byte) row-major operands
// with the 128-byte swizzle their wgmma descriptors expect, and the device checks they share.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "core/status.h"

namespace orochi::cuda {

// The maps are written through a reference: CUtensorMap is 64-byte aligned, and passing it by
// value (an Expected<CUtensorMap>) draws GCC's ABI note.
// [rows, cols] bf16, rows cols * 2 bytes apart (a multiple of 16): boxes of 64 columns x box_rows.
Status bf16_rows_map(CUtensorMap& map, const void* base, int64_t rows, int64_t cols, int box_rows);

// [rows, heads, 128] bf16: boxes of 64 head dims x 1 head x box_rows rows.
Status bf16_rows_heads_map(CUtensorMap& map, const void* base, int64_t rows, int64_t heads, int box_rows);

// [rows, cols] bytes (e4m3 codes), cols a multiple of 16: boxes of 128 columns (one 128-byte
// swizzle row) x box_rows.
Status u8_rows_map(CUtensorMap& map, const void* base, int64_t rows, int64_t cols, int box_rows);

// Whether the current device is compute capability 9.0 (the sm_90a kernels' target); read once per
// device, like the SM count: the launchers ask on every call.
bool device_is_hopper();

// The current device's SM count (cached per device).
Expected<int> multiprocessor_count();

}  // namespace orochi::cuda
