#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

namespace orochi {

std::string device_name(Device device) {
  return device.kind == DeviceKind::kCPU ? "cpu" : "cuda:" + std::to_string(device.index);
}

std::string shape_to_string(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes, bool zero) {
  auto b = std::shared_ptr<Buffer>(new Buffer());
  const size_t rounded = (bytes + 63) / 64 * 64;
  b->data_ = rounded ? std::aligned_alloc(64, rounded) : nullptr;
  if (rounded && b->data_ == nullptr) throw std::bad_alloc();
  if (rounded && zero) std::memset(b->data_, 0, rounded);
  b->size_ = bytes;
  b->owned_ = true;
  return b;
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, size_t bytes, std::shared_ptr<const void> owner,
                                     Device device) {
  auto b = std::shared_ptr<Buffer>(new Buffer());
  b->data_ = data;
  b->size_ = bytes;
  b->owner_ = std::move(owner);
  b->device_ = device;
  return b;
}

Buffer::~Buffer() {
  if (owned_) std::free(data_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  const int64_t n = shape_numel(shape);
  OROCHI_CHECK(n >= 0, "bad shape ", shape_to_string(shape));
  return from_buffer(Buffer::allocate(static_cast<size_t>(n) * dtype_size(dtype)), 0, shape, dtype);
}

Tensor Tensor::uninitialized(const Shape& shape, DType dtype) {
  const int64_t n = shape_numel(shape);
  OROCHI_CHECK(n >= 0, "bad shape ", shape_to_string(shape));
  return from_buffer(Buffer::allocate(static_cast<size_t>(n) * dtype_size(dtype), /*zero=*/false), 0, shape, dtype);
}

Tensor Tensor::from_buffer(std::shared_ptr<Buffer> buffer, size_t offset_bytes, const Shape& shape,
                           DType dtype) {
  const int64_t n = shape_numel(shape);
  OROCHI_CHECK(n >= 0, "bad shape ", shape_to_string(shape));
  OROCHI_CHECK(offset_bytes + static_cast<size_t>(n) * dtype_size(dtype) <= buffer->size(),
               "tensor ", shape_to_string(shape), " overruns its buffer");
  Tensor t;
  t.buffer_ = std::move(buffer);
  t.offset_ = offset_bytes;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::from_floats(const std::vector<float>& values, const Shape& shape) {
  Tensor t = empty(shape, DType::kF32);
  OROCHI_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "got ", values.size(),
               " values for shape ", shape_to_string(shape));
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::from_ints(const std::vector<int64_t>& values, const Shape& shape) {
  Tensor t = empty(shape, DType::kI64);
  OROCHI_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "got ", values.size(),
               " values for shape ", shape_to_string(shape));
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

int64_t Tensor::dim(int i) const {
  const int n = ndim();
  if (i < 0) i += n;
  OROCHI_CHECK(i >= 0 && i < n, "dim ", i, " out of range for ", describe());
  return shape_[i];
}

int64_t Tensor::numel() const { return shape_numel(shape_); }

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype_)) + shape_to_string(shape_);
}

void* Tensor::raw_data() const {
  OROCHI_CHECK(defined(), "use of an undefined tensor");
  return static_cast<char*>(buffer_->data()) + offset_;
}

void Tensor::require_host(const char* what) const {
  // These copy on the host; a device tensor goes through its backend (cuda::download) instead.
  OROCHI_CHECK(device().kind == DeviceKind::kCPU, what, "() on ", device_name(device()), " tensor ", describe(),
               ": copy it to the host first");
}

void Tensor::check_element_type(size_t size, bool is_float, bool is_f32) const {
  OROCHI_CHECK(dtype_size(dtype_) == size && (!is_float || dtype_is_float(dtype_)) &&
                   (!is_f32 || dtype_ == DType::kF32),
               "element access of size ", size, " on ", describe());
}

Tensor Tensor::view(const Shape& shape) const {
  OROCHI_CHECK(is_contiguous(), "view of a non-contiguous tensor ", describe());
  Shape s = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      OROCHI_CHECK(infer < 0, "two -1 dims in view ", shape_to_string(shape));
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    OROCHI_CHECK(known > 0 && numel() % known == 0, "cannot view ", describe(), " as ",
                 shape_to_string(shape));
    s[infer] = numel() / known;
  }
  OROCHI_CHECK(shape_numel(s) == numel(), "cannot view ", describe(), " as ", shape_to_string(shape));
  Tensor t = *this;
  t.shape_ = s;
  t.strides_ = contiguous_strides(s);
  return t;
}

Tensor Tensor::slice(int d, int64_t start, int64_t end) const {
  if (d < 0) d += ndim();
  OROCHI_CHECK(d >= 0 && d < ndim(), "slice dim out of range for ", describe());
  OROCHI_CHECK(0 <= start && start <= end && end <= shape_[d], "slice [", start, ", ", end,
               ") out of range for dim ", d, " of ", describe());
  Tensor t = *this;
  t.offset_ += static_cast<size_t>(start * strides_[d]) * dtype_size(dtype_);
  t.shape_[d] = end - start;
  return t;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  require_host("contiguous");
  Tensor out = uninitialized(shape_, dtype_);  // the walk below writes every element
  out.scale_ = scale_;
  const size_t es = dtype_size(dtype_);
  const int64_t n = numel();
  const char* src = static_cast<const char*>(raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  if (n == 0) return out;
  // Walk the outer dims with an odometer and copy the innermost dim as one run when its elements
  // are adjacent (views made by slice() keep stride 1 there): one memcpy per row, not per element.
  const size_t nd = shape_.size();
  const bool row_runs = nd > 0 && strides_[nd - 1] == 1;
  const int64_t run = row_runs ? shape_[nd - 1] : 1;
  const size_t outer_dims = row_runs ? nd - 1 : nd;
  Shape index(outer_dims, 0);
  for (int64_t i = 0; i < n; i += run) {
    int64_t off = 0;
    for (size_t k = 0; k < outer_dims; ++k) off += index[k] * strides_[k];
    std::memcpy(dst + i * es, src + off * es, static_cast<size_t>(run) * es);
    for (size_t k = outer_dims; k-- > 0;) {  // odometer increment
      if (++index[k] < shape_[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

Tensor Tensor::clone() const {
  require_host("clone");
  Tensor src = contiguous();
  Tensor out = empty(shape_, dtype_);
  out.scale_ = scale_;
  std::memcpy(out.raw_data(), src.raw_data(), nbytes());
  return out;
}

Tensor Tensor::to(DType dtype) const {
  require_host("to");
  if (dtype == dtype_) return clone();
  Tensor src = contiguous();
  const size_t n = static_cast<size_t>(numel());
  Tensor out = empty(shape_, dtype);
  if (dtype_ == DType::kF32) {
    convert_from_f32(dtype, src.data<float>(), out.raw_data(), n);
  } else if (dtype == DType::kF32) {
    convert_to_f32(dtype_, src.raw_data(), out.data<float>(), n, scale_);
  } else {
    std::vector<float> tmp(n);
    convert_to_f32(dtype_, src.raw_data(), tmp.data(), n, scale_);
    convert_from_f32(dtype, tmp.data(), out.raw_data(), n);
  }
  return out;
}

}  // namespace orochi
