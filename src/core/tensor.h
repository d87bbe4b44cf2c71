// Tensor: a typed, shaped, strided view into a Buffer. Views (view, slice) share the buffer; only
// contiguous() / to() / clone() copy. A buffer either owns heap memory or keeps alive whatever owns
// its bytes (an mmapped checkpoint), so weights can be viewed zero-copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"

namespace orochi {

using Shape = std::vector<int64_t>;

enum class DeviceKind : uint8_t { kCPU, kCUDA };

struct Device {
  DeviceKind kind = DeviceKind::kCPU;
  int index = 0;
  bool operator==(const Device&) const = default;
};

std::string device_name(Device device);
std::string shape_to_string(const Shape& shape);
// Product of dims; nullopt-free: returns -1 on overflow or a negative dim.
int64_t shape_numel(const Shape& shape);

class Buffer {
 public:
  // 64-byte aligned host memory, zero-filled unless `zero` is false (then its contents are
  // undefined: for buffers every byte of which is written next, so a large one is touched once).
  static std::shared_ptr<Buffer> allocate(size_t bytes, bool zero = true);
  // Borrowed memory kept valid by `owner` (e.g. a mapped file).
  static std::shared_ptr<Buffer> wrap(void* data, size_t bytes, std::shared_ptr<const void> owner,
                                      Device device = {});
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Device device() const { return device_; }

 private:
  Buffer() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool owned_ = false;
  Device device_;
  std::shared_ptr<const void> owner_;
};

class Tensor {
 public:
  Tensor() = default;

  static Tensor empty(const Shape& shape, DType dtype);  // zero-filled host tensor
  // A host tensor whose contents are undefined: the caller writes every element before reading.
  static Tensor uninitialized(const Shape& shape, DType dtype);
  static Tensor zeros(const Shape& shape, DType dtype) { return empty(shape, dtype); }
  static Tensor from_buffer(std::shared_ptr<Buffer> buffer, size_t offset_bytes, const Shape& shape,
                            DType dtype);
  static Tensor from_floats(const std::vector<float>& values, const Shape& shape);
  static Tensor from_ints(const std::vector<int64_t>& values, const Shape& shape);

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return buffer_ ? buffer_->device() : Device{}; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // negative counts from the end
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  std::string describe() const;  // "bf16[2, 3]"

  // Per-tensor dequantization scale for fp8 (1 for every other dtype).
  float scale() const { return scale_; }
  void set_scale(float scale) { scale_ = scale; }

  void* raw_data() const;
  template <typename T>
  T* data() const {
    check_element_type(sizeof(T), std::is_floating_point_v<T>, std::is_same_v<T, float>);
    return static_cast<T*>(raw_data());
  }

  // Same bytes, new shape (one dim may be -1). Requires a contiguous tensor.
  Tensor view(const Shape& shape) const;
  // Rows [start, end) of dimension `d`; shares the buffer.
  Tensor slice(int d, int64_t start, int64_t end) const;
  // A contiguous copy, or *this when already contiguous.
  Tensor contiguous() const;
  // A contiguous copy in `dtype` (fp8 applies / removes the scale).
  Tensor to(DType dtype) const;
  Tensor clone() const;

 private:
  void check_element_type(size_t size, bool is_float, bool is_f32) const;
  void require_host(const char* what) const;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;  // bytes into buffer_
  Shape shape_;
  Shape strides_;  // in elements
  DType dtype_ = DType::kF32;
  float scale_ = 1.0f;
};

Shape contiguous_strides(const Shape& shape);

}  // namespace orochi
