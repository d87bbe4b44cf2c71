#include "dist/cpu_exchange.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/check.h"

namespace orochi::dist {
namespace {

// Counts beyond this would overflow a byte offset; no real buffer is near it.
constexpr int64_t kMaxElements = int64_t{1} << 56;

std::string rank_prefix(const std::string& group, int rank) {
  return "comm group '" + group + "': rank " + std::to_string(rank) + " ";
}

Status check_all_to_all_counts(const Exchange& e, const std::string& group) {
  const int n = static_cast<int>(e.ranks.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const int64_t sent = e.ranks[i].send_counts[j], expected = e.ranks[j].recv_counts[i];
      if (sent != expected)
        return invalid_argument("comm group '" + group + "': all_to_all rank " + std::to_string(i) + " sends " +
                                std::to_string(sent) + " elements to rank " + std::to_string(j) + ", which expects " +
                                std::to_string(expected) + " from it; send and receive counts must agree pairwise");
    }
  return Status::ok();
}

// Sums `count` elements of every rank's chunk 0 as Acc, in rank order.
template <typename T, typename Acc, typename Load, typename Store>
void sum_as(const Exchange& e, int64_t count, void* out, Load load, Store store) {
  std::vector<const T*> src;
  for (const Arrival& a : e.ranks) src.push_back(reinterpret_cast<const T*>(a.chunks[0].data()));
  T* dst = static_cast<T*>(out);
  for (int64_t k = 0; k < count; ++k) {
    Acc acc = load(src[0][k]);
    for (size_t r = 1; r < src.size(); ++r) acc += load(src[r][k]);
    dst[k] = store(acc);
  }
}

template <typename T>
T same(T v) {
  return v;
}

}  // namespace

std::vector<std::byte> stage_bytes(const void* data, int64_t bytes) {
  std::vector<std::byte> out(static_cast<size_t>(bytes));
  if (bytes > 0) std::memcpy(out.data(), data, out.size());
  return out;
}

bool summable(DType d) {
  return d == DType::kF32 || d == DType::kF64 || d == DType::kBF16 || d == DType::kF16 || d == DType::kI64 ||
         d == DType::kI32;
}

Status check_agreement(const Exchange& e, const std::string& group) {
  const Arrival& first = e.ranks[0];
  for (int r = 0; r < static_cast<int>(e.ranks.size()); ++r) {
    const Arrival& a = e.ranks[r];
    if (!a.bad_arguments.empty())
      return invalid_argument(rank_prefix(group, r) + "called " + a.op + " with bad arguments: " + a.bad_arguments);
    if (a.op != first.op)
      return invalid_argument(rank_prefix(group, r) + "called " + a.op + " while rank 0 called " + first.op +
                              " at the same call number: the ranks took different code paths");
    if (a.dtype != first.dtype)
      return invalid_argument(rank_prefix(group, r) + "passed " + dtype_name(a.dtype) + " to " + a.op +
                              " while rank 0 passed " + dtype_name(first.dtype));
    if (a.op != "all_to_all" && a.count != first.count)
      return invalid_argument(rank_prefix(group, r) + "passed " + std::to_string(a.count) + " elements to " + a.op +
                              " while rank 0 passed " + std::to_string(first.count));
  }
  return first.op == "all_to_all" ? check_all_to_all_counts(e, group) : Status::ok();
}

void sum_in_rank_order(const Exchange& e, DType dtype, int64_t count, void* out) {
  switch (dtype) {
    case DType::kF32:
      return sum_as<float, float>(e, count, out, same<float>, same<float>);
    case DType::kF64:
      return sum_as<double, double>(e, count, out, same<double>, same<double>);
    case DType::kBF16:
      return sum_as<uint16_t, float>(e, count, out, bf16_to_f32, f32_to_bf16);
    case DType::kF16:
      return sum_as<uint16_t, float>(e, count, out, f16_to_f32, f32_to_f16);
    // Integers add as unsigned so an overflow wraps instead of being undefined.
    case DType::kI64:
      return sum_as<int64_t, uint64_t>(
          e, count, out, [](int64_t v) { return static_cast<uint64_t>(v); },
          [](uint64_t v) { return static_cast<int64_t>(v); });
    case DType::kI32:
      return sum_as<int32_t, uint32_t>(
          e, count, out, [](int32_t v) { return static_cast<uint32_t>(v); },
          [](uint32_t v) { return static_cast<int32_t>(v); });
    default:
      OROCHI_CHECK(false, "sum_in_rank_order on ", dtype_name(dtype), ", which summable() refuses");
  }
}

std::string check_all_to_all_arguments(int size, const void* send, const std::vector<int64_t>& send_counts,
                                       const std::vector<int64_t>& send_offsets, const void* recv,
                                       const std::vector<int64_t>& recv_counts,
                                       const std::vector<int64_t>& recv_offsets) {
  const size_t n = static_cast<size_t>(size);
  if (send_counts.size() != n || send_offsets.size() != n || recv_counts.size() != n || recv_offsets.size() != n)
    return "every count and offset list needs one entry per rank (" + std::to_string(size) + "), got " +
           std::to_string(send_counts.size()) + "/" + std::to_string(send_offsets.size()) + "/" +
           std::to_string(recv_counts.size()) + "/" + std::to_string(recv_offsets.size());
  int64_t sent = 0, received = 0;
  for (size_t j = 0; j < n; ++j) {
    for (int64_t v : {send_counts[j], send_offsets[j], recv_counts[j], recv_offsets[j]})
      if (v < 0 || v > kMaxElements)
        return "entry " + std::to_string(j) + " has a count or offset of " + std::to_string(v);
    sent += send_counts[j];
    received += recv_counts[j];
  }
  if ((sent > 0 && !send) || (received > 0 && !recv)) return "a null buffer with a non-zero count";
  // Two sources writing the same receive elements would race; sort the regions and compare neighbours.
  std::vector<std::pair<int64_t, int64_t>> regions;
  for (size_t j = 0; j < n; ++j)
    if (recv_counts[j] > 0) regions.emplace_back(recv_offsets[j], recv_offsets[j] + recv_counts[j]);
  std::sort(regions.begin(), regions.end());
  for (size_t k = 1; k < regions.size(); ++k)
    if (regions[k].first < regions[k - 1].second)
      return "receive regions [" + std::to_string(regions[k - 1].first) + ", " + std::to_string(regions[k - 1].second) +
             ") and [" + std::to_string(regions[k].first) + ", " + std::to_string(regions[k].second) + ") overlap";
  return "";
}

}  // namespace orochi::dist
