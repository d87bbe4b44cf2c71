// The video VAE encoder's CUDA ops: checks, the kernels in kernels/vae_encoder.cu, and cuDNN's
// convolution (legacy Nd API).
#include "backends/cuda/ops_conv3d.h"

#include <cudnn.h>

#include <array>
#include <map>
#include <string>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/kernels/vae_encoder.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {
namespace {

float* f32_data(const Tensor& t) { return static_cast<float*>(t.raw_data()); }

Status cudnn_check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok();
  return Status(ErrorCode::kIo, std::string(what) + " failed: " + cudnnGetErrorString(status));
}

void require_video(const Tensor& t, const char* what) {
  detail::require_cuda(t, DType::kF32, what);
  OROCHI_CHECK(t.ndim() == 4, what, " must be [C, T, H, W], got ", t.describe());
}

}  // namespace

Status encoder_pad(const Tensor& x, int64_t front_t, int64_t top, int64_t bottom, int64_t left, int64_t right,
                   const Tensor& out, cudaStream_t stream) {
  require_video(x, "encoder_pad input");
  require_video(out, "encoder_pad output");
  const int64_t C = x.dim(0), T = x.dim(1), H = x.dim(2), W = x.dim(3);
  OROCHI_CHECK(front_t >= 0 && top >= 0 && bottom >= 0 && left >= 0 && right >= 0 && top < H && bottom < H &&
                   left < W && right < W,
               "encoder_pad: pads must be >= 0 and below the side, got ", top, "/", bottom, "/", left, "/", right,
               " for ", x.describe());
  OROCHI_CHECK(out.shape() == (Shape{C, T + front_t, H + top + bottom, W + left + right}), "encoder_pad: output ",
               out.describe(), " for input ", x.describe());
  detail::require_same_device(x, out, "encoder_pad");
  return detail::launch_status(kernels::launch_encoder_pad(f32_data(x), f32_data(out), C, T, H, W, front_t, top,
                                                           bottom, left, right, stream),
                               "encoder_pad kernel");
}

Status group_norm_frames(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups, float eps,
                         bool silu, const Tensor& out, cudaStream_t stream) {
  require_video(x, "group_norm_frames input");
  const int64_t C = x.dim(0);
  detail::require_cuda(weight, DType::kF32, "group_norm_frames weight");
  detail::require_cuda(bias, DType::kF32, "group_norm_frames bias");
  OROCHI_CHECK(groups >= 1 && C % groups == 0 && weight.numel() == C && bias.numel() == C, "group_norm_frames: ", C,
               " channels, ", groups, " groups, weight ", weight.describe(), ", bias ", bias.describe());
  detail::require_cuda(out, DType::kF32, "group_norm_frames output");
  OROCHI_CHECK(out.shape() == x.shape(), "group_norm_frames: output ", out.describe(), " for ", x.describe());
  detail::require_same_device(x, out, "group_norm_frames");
  return detail::launch_status(
      kernels::launch_group_norm_frames(f32_data(x), f32_data(weight), f32_data(bias), f32_data(out), C, x.dim(1),
                                        x.dim(2) * x.dim(3), groups, eps, silu, stream),
      "group_norm_frames kernel");
}

Status add_into(const Tensor& acc, const Tensor& y, cudaStream_t stream) {
  detail::require_cuda(acc, DType::kF32, "add_into accumulator");
  detail::require_cuda(y, DType::kF32, "add_into addend");
  OROCHI_CHECK(acc.shape() == y.shape(), "add_into: ", acc.describe(), " += ", y.describe());
  detail::require_same_device(acc, y, "add_into");
  return detail::launch_status(kernels::launch_add_into(f32_data(acc), f32_data(y), acc.numel(), stream),
                               "add_into kernel");
}

const char* layout_name(VideoLayout layout) { return layout == VideoLayout::kNdhwc ? "NDHWC" : "NCDHW"; }

VideoDims video_dims(const Tensor& t, VideoLayout layout) {
  OROCHI_CHECK(t.ndim() == 4, "a video tensor is 4-D, got ", t.describe());
  if (layout == VideoLayout::kNdhwc) return {t.dim(3), t.dim(0), t.dim(1), t.dim(2)};
  return {t.dim(0), t.dim(1), t.dim(2), t.dim(3)};
}

Shape video_shape(VideoLayout layout, int64_t C, int64_t T, int64_t H, int64_t W) {
  return layout == VideoLayout::kNdhwc ? Shape{T, H, W, C} : Shape{C, T, H, W};
}

namespace {

constexpr int64_t kMax32 = int64_t{1} << 31;

void require_channel_vector(const Tensor& v, int64_t C, const char* what) {
  if (!v.defined()) return;
  detail::require_cuda(v, DType::kF32, what);
  OROCHI_CHECK(v.numel() == C, what, " ", v.describe(), " for ", C, " channels");
}

const float* optional_f32(const Tensor& t) { return t.defined() ? f32_data(t) : nullptr; }

}  // namespace

Status encoder_pad_to(const Tensor& x, VideoLayout in_layout, const Tensor& bias, int64_t front_t, int64_t top,
                      int64_t bottom, int64_t left, int64_t right, const Tensor& out, VideoLayout out_layout,
                      cudaStream_t stream) {
  require_video(x, "encoder_pad_to input");
  require_video(out, "encoder_pad_to output");
  const VideoDims d = video_dims(x, in_layout), o = video_dims(out, out_layout);
  OROCHI_CHECK(front_t >= 0 && top >= 0 && bottom >= 0 && left >= 0 && right >= 0 && top < d.H && bottom < d.H &&
                   left < d.W && right < d.W,
               "encoder_pad_to: pads must be >= 0 and below the side, got ", top, "/", bottom, "/", left, "/", right,
               " for ", x.describe());
  OROCHI_CHECK(o.C >= d.C && o.T == d.T + front_t && o.H == d.H + top + bottom && o.W == d.W + left + right,
               "encoder_pad_to: output ", out.describe(), " (", layout_name(out_layout), ") for input ", x.describe(),
               " (", layout_name(in_layout), ")");
  OROCHI_CHECK(out.numel() < kMax32 && x.numel() < kMax32, "encoder_pad_to: 2^31 elements or more");
  require_channel_vector(bias, d.C, "encoder_pad_to bias");
  detail::require_same_device(x, out, "encoder_pad_to");
  return detail::launch_status(
      kernels::launch_encoder_pad_to(f32_data(x), in_layout == VideoLayout::kNdhwc, optional_f32(bias), f32_data(out),
                                     out_layout == VideoLayout::kNdhwc, d.C, o.C, d.T, d.H, d.W, front_t, top, bottom,
                                     left, right, stream),
      "encoder_pad_to kernel");
}

Status encoder_tile_pad(const Tensor& clip, int64_t y0, int64_t x0, int64_t h, int64_t w, int64_t front_t, int64_t pad,
                        const Tensor& out, VideoLayout out_layout, cudaStream_t stream) {
  require_video(clip, "encoder_tile_pad clip");
  require_video(out, "encoder_tile_pad output");
  const int64_t C = clip.dim(0), T = clip.dim(1), Hc = clip.dim(2), Wc = clip.dim(3);
  const VideoDims o = video_dims(out, out_layout);
  OROCHI_CHECK(y0 >= 0 && x0 >= 0 && h >= 1 && w >= 1 && y0 + h <= Hc && x0 + w <= Wc && pad >= 0 && pad < h &&
                   pad < w && front_t >= 0,
               "encoder_tile_pad: tile at ", y0, ",", x0, " of ", h, "x", w, ", pad ", pad, " in clip ",
               clip.describe());
  OROCHI_CHECK(o.C >= C && o.T == T + front_t && o.H == h + 2 * pad && o.W == w + 2 * pad, "encoder_tile_pad: output ",
               out.describe(), " (", layout_name(out_layout), ") for a ", h, "x", w, " tile of ", clip.describe());
  OROCHI_CHECK(out.numel() < kMax32 && clip.numel() < kMax32, "encoder_tile_pad: 2^31 elements or more");
  detail::require_same_device(clip, out, "encoder_tile_pad");
  return detail::launch_status(
      kernels::launch_encoder_window_pad(f32_data(clip), false, nullptr, f32_data(out),
                                         out_layout == VideoLayout::kNdhwc, C, o.C, T, Hc, Wc, y0, x0, h, w, front_t,
                                         pad, pad, pad, pad, stream),
      "encoder_tile_pad kernel");
}

Status group_norm_pad(const Tensor& x, const Tensor& in_bias, const Tensor& weight, const Tensor& bias, int64_t groups,
                      float eps, bool silu, VideoLayout layout, int64_t front, int64_t pad, const Tensor& out,
                      DeviceArena& scratch, cudaStream_t stream) {
  require_video(x, "group_norm_pad input");
  require_video(out, "group_norm_pad output");
  const VideoDims d = video_dims(x, layout), o = video_dims(out, layout);
  detail::require_cuda(weight, DType::kF32, "group_norm_pad weight");
  detail::require_cuda(bias, DType::kF32, "group_norm_pad bias");
  OROCHI_CHECK(groups >= 1 && d.C % groups == 0 && weight.numel() == d.C && bias.numel() == d.C,
               "group_norm_pad: ", d.C, " channels, ", groups, " groups, weight ", weight.describe(), ", bias ",
               bias.describe());
  require_channel_vector(in_bias, d.C, "group_norm_pad input bias");
  OROCHI_CHECK(front >= 0 && (pad == 0 || (pad == 1 && d.H >= 2 && d.W >= 2)),
               "group_norm_pad: front ", front, ", reflect pad ", pad, " (0 or 1, sides >= 2) for ", x.describe());
  OROCHI_CHECK(o.C == d.C && o.T == d.T + front && o.H == d.H + 2 * pad && o.W == d.W + 2 * pad,
               "group_norm_pad: output ", out.describe(), " for input ", x.describe(), " (", layout_name(layout),
               "), front ", front, ", pad ", pad);
  OROCHI_CHECK(out.numel() < kMax32, "group_norm_pad: 2^31 elements or more");
  detail::require_same_device(x, out, "group_norm_pad");
  if (front > 0 && o.C > 0) {  // the causal zero frames: contiguous channels last, one run per channel otherwise
    const size_t frame = static_cast<size_t>(o.H * o.W) * sizeof(float);
    const cudaError_t e =
        layout == VideoLayout::kNdhwc
            ? cudaMemsetAsync(out.raw_data(), 0, static_cast<size_t>(front) * frame * o.C, stream)
            : cudaMemset2DAsync(out.raw_data(), static_cast<size_t>(o.T) * frame, 0, static_cast<size_t>(front) * frame,
                                static_cast<size_t>(o.C), stream);
    OROCHI_RETURN_IF_ERROR(detail::launch_status(e, "group_norm_pad zero frames"));
  }
  const bool cl = layout == VideoLayout::kNdhwc;
  const size_t mark = scratch.mark();
  const size_t scratch_bytes = kernels::group_norm_pad_scratch_bytes(cl, d.C, d.T, d.H, d.W, groups);
  void* stats = nullptr;
  if (scratch_bytes > 0) {  // without room the kernel takes its block-per-group path (same results, slower)
    Expected<void*> got = scratch.allocate(scratch_bytes);
    if (got) stats = *got;
  }
  const Status status = detail::launch_status(
      kernels::launch_group_norm_pad(f32_data(x), optional_f32(in_bias), f32_data(weight), f32_data(bias),
                                     f32_data(out), cl, d.C, d.T, d.H, d.W, groups, eps, silu, front, pad, stats,
                                     stats ? scratch_bytes : 0, stream),
      "group_norm_pad kernel");
  scratch.reset(mark);
  return status;
}

Status bias_residual(const Tensor& a, const Tensor& a_bias, const Tensor& y, const Tensor& y_bias, VideoLayout layout,
                     const Tensor& out, cudaStream_t stream) {
  require_video(a, "bias_residual a");
  require_video(out, "bias_residual output");
  const VideoDims d = video_dims(a, layout);
  OROCHI_CHECK(out.shape() == a.shape(), "bias_residual: output ", out.describe(), " for ", a.describe());
  if (y.defined()) {
    require_video(y, "bias_residual y");
    OROCHI_CHECK(y.shape() == a.shape(), "bias_residual: ", a.describe(), " + ", y.describe());
    detail::require_same_device(a, y, "bias_residual");
  }
  OROCHI_CHECK(!y_bias.defined() || y.defined(), "bias_residual: a bias for y without y");
  require_channel_vector(a_bias, d.C, "bias_residual a bias");
  require_channel_vector(y_bias, d.C, "bias_residual y bias");
  OROCHI_CHECK(a.numel() < kMax32, "bias_residual: 2^31 elements or more");
  detail::require_same_device(a, out, "bias_residual");
  return detail::launch_status(
      kernels::launch_bias_residual(f32_data(a), optional_f32(a_bias), optional_f32(y), optional_f32(y_bias),
                                    f32_data(out), layout == VideoLayout::kNdhwc, d.C, a.numel(), stream),
      "bias_residual kernel");
}

struct Conv3dRunner::Descriptors {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  struct Plan {
    cudnnConvolutionFwdAlgo_t algo;
    cudnnMathType_t math;
    size_t memory;
  };
  std::map<std::string, Plan> plans;  // by input shape, weight shape and strides
  ~Descriptors() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
    if (handle) cudnnDestroy(handle);
  }
};

Expected<std::unique_ptr<Conv3dRunner>> Conv3dRunner::create(cudaStream_t stream, ConvMath math) {
  std::unique_ptr<Conv3dRunner> r(new Conv3dRunner());
  r->math_ = math;
  r->d_ = std::make_unique<Descriptors>();
  Descriptors& d = *r->d_;
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnCreate(&d.handle), "cudnnCreate"));
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnSetStream(d.handle, stream), "cudnnSetStream"));
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnCreateTensorDescriptor(&d.x), "cudnnCreateTensorDescriptor"));
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnCreateTensorDescriptor(&d.y), "cudnnCreateTensorDescriptor"));
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnCreateTensorDescriptor(&d.bias), "cudnnCreateTensorDescriptor"));
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnCreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor"));
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnCreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor"));
  return r;
}

Conv3dRunner::~Conv3dRunner() = default;

Status Conv3dRunner::forward(const Tensor& x, const Tensor& w, const Tensor& bias, int64_t stride_t, int64_t stride_hw,
                             const Tensor& y, DeviceArena& scratch, VideoLayout layout) {
  require_video(x, "conv3d input");
  require_video(y, "conv3d output");
  detail::require_cuda(w, DType::kF32, "conv3d weight");
  const bool cl = layout == VideoLayout::kNdhwc;
  const VideoDims xd4 = video_dims(x, layout);
  // The kernel's sizes: [Cout, Cin, kt, kh, kw], channels last stored [Cout, kt, kh, kw, Cin].
  OROCHI_CHECK(w.ndim() == 5, "conv3d: weight ", w.describe());
  const int64_t Cout = w.dim(0), Cin = cl ? w.dim(4) : w.dim(1), kt = cl ? w.dim(1) : w.dim(2),
                kh = cl ? w.dim(2) : w.dim(3), kw = cl ? w.dim(3) : w.dim(4);
  OROCHI_CHECK(Cin == xd4.C, "conv3d: weight ", w.describe(), " for input ", x.describe(), " (", layout_name(layout),
               ")");
  const int64_t To = (xd4.T - kt) / stride_t + 1, Ho = (xd4.H - kh) / stride_hw + 1, Wo = (xd4.W - kw) / stride_hw + 1;
  OROCHI_CHECK(xd4.T >= kt && xd4.H >= kh && xd4.W >= kw && y.shape() == video_shape(layout, Cout, To, Ho, Wo),
               "conv3d: output ", y.describe(), " for input ", x.describe(), ", weight ", w.describe(), ", strides ",
               stride_t, "/", stride_hw, " (", layout_name(layout), ")");
  if (bias.defined()) {
    detail::require_cuda(bias, DType::kF32, "conv3d bias");
    OROCHI_CHECK(bias.numel() == Cout, "conv3d bias ", bias.describe(), " for ", Cout, " outputs");
  }
  detail::require_same_device(x, y, "conv3d");
  Descriptors& d = *d_;
  // Descriptors are always N, C, D, H, W in cuDNN; channels last changes the strides only.
  auto dims5 = [](const VideoDims& v) {
    return std::array<int, 5>{1, static_cast<int>(v.C), static_cast<int>(v.T), static_cast<int>(v.H),
                              static_cast<int>(v.W)};
  };
  auto strides5 = [cl](const std::array<int, 5>& dim) {
    std::array<int, 5> s{};
    if (cl) {  // memory order N, D, H, W, C
      s[1] = 1;
      s[4] = dim[1];
      s[3] = s[4] * dim[4];
      s[2] = s[3] * dim[3];
      s[0] = s[2] * dim[2];
    } else {
      s[4] = 1;
      for (int i = 3; i >= 0; --i) s[i] = s[i + 1] * dim[i + 1];
    }
    return s;
  };
  if (x.numel() >= (int64_t{1} << 31) || y.numel() >= (int64_t{1} << 31))  // cuDNN's Nd descriptors take int
    return unsupported("conv3d of " + x.describe() + " into " + y.describe() +
                       ": tensors of 2^31 elements or more; encode with tiling on (256 px tiles)");
  const std::array<int, 5> xd = dims5(xd4), yd = dims5(VideoDims{Cout, To, Ho, Wo});
  const std::array<int, 5> xs = strides5(xd), ys = strides5(yd);
  const int wd[5] = {static_cast<int>(Cout), static_cast<int>(Cin), static_cast<int>(kt), static_cast<int>(kh),
                     static_cast<int>(kw)};
  const int pads[3] = {0, 0, 0}, strides[3] = {static_cast<int>(stride_t), static_cast<int>(stride_hw),
                                               static_cast<int>(stride_hw)},
            dil[3] = {1, 1, 1};
  OROCHI_RETURN_IF_ERROR(
      cudnn_check(cudnnSetTensorNdDescriptor(d.x, CUDNN_DATA_FLOAT, 5, xd.data(), xs.data()), "conv3d input desc"));
  OROCHI_RETURN_IF_ERROR(
      cudnn_check(cudnnSetTensorNdDescriptor(d.y, CUDNN_DATA_FLOAT, 5, yd.data(), ys.data()), "conv3d output desc"));
  OROCHI_RETURN_IF_ERROR(cudnn_check(
      cudnnSetFilterNdDescriptor(d.w, CUDNN_DATA_FLOAT, cl ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, 5, wd),
      "conv3d filter desc"));
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnSetConvolutionNdDescriptor(d.conv, 3, pads, strides, dil,
                                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                                     "conv3d convolution desc"));
  // TF32 tensor cores as torch's default cudnn.allow_tf32 = True allows them, or plain fp32 FMAs.
  OROCHI_RETURN_IF_ERROR(cudnn_check(
      cudnnSetConvolutionMathType(d.conv, math_ == ConvMath::kTf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
      "cudnnSetConvolutionMathType"));
  // The algorithm for this shape: chosen once (cuDNN's heuristics, or timed when autotuning) and kept.
  const std::string key = std::string(layout_name(layout)) + shape_to_string(x.shape()) + shape_to_string(w.shape()) +
                          std::to_string(stride_t) + "/" + std::to_string(stride_hw);
  auto cached = d.plans.find(key);
  if (cached == d.plans.end()) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    if (autotune_) {  // every algorithm timed on these very tensors (y is overwritten below anyway)
      const size_t tune_mark = scratch.mark();
      const size_t slack = 2 * DeviceArena::kAlignment;
      const size_t bytes = scratch.available() > slack ? scratch.available() - slack : 0;
      Expected<void*> ws = scratch.allocate(bytes);
      if (!ws) return ws.status().with_context("conv3d autotune workspace");
      const Status tuned = cudnn_check(cudnnFindConvolutionForwardAlgorithmEx(
                                           d.handle, d.x, x.raw_data(), d.w, w.raw_data(), d.conv, d.y, y.raw_data(),
                                           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, *ws, bytes),
                                       "conv3d autotune");
      scratch.reset(tune_mark);
      OROCHI_RETURN_IF_ERROR(tuned);
    } else {
      OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnGetConvolutionForwardAlgorithm_v7(d.handle, d.x, d.w, d.conv, d.y,
                                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                                                &found, perf),
                                         "conv3d heuristics"));
    }
    // The first usable algorithm that keeps the math type asked for and whose workspace fits the
    // scratch arena. kF32 means the reference's plain fp32 arithmetic: FMA math and a GEMM-form
    // algorithm (FFT and Winograd transforms change the rounding far beyond summation order).
    auto plain_fp32 = [](const cudnnConvolutionFwdAlgoPerf_t& p) {
      return p.mathType == CUDNN_FMA_MATH && (p.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
                                              p.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
                                              p.algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
    };
    // TF32 never means ALLOW_CONVERSION (fp32 operands rounded to fp16), which torch does not use either.
    auto tf32_or_fp32 = [](const cudnnConvolutionFwdAlgoPerf_t& p) {
      return p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    };
    int pick = -1;
    for (int i = 0; i < found && pick < 0; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          (math_ == ConvMath::kTf32 ? tf32_or_fp32(perf[i]) : plain_fp32(perf[i])) &&
          perf[i].memory + DeviceArena::kAlignment <= scratch.available())
        pick = i;
    if (pick < 0) return Status(ErrorCode::kUnsupported, "cuDNN offers no fp32 algorithm for conv3d of " +
                                                             x.describe() + " with " + w.describe());
    cached = d.plans.emplace(key, Descriptors::Plan{perf[pick].algo, perf[pick].mathType, perf[pick].memory}).first;
  }
  const Descriptors::Plan plan = cached->second;
  // The descriptor runs the algorithm with the math type cuDNN rated it for (its documented use).
  OROCHI_RETURN_IF_ERROR(cudnn_check(cudnnSetConvolutionMathType(d.conv, plan.math), "cudnnSetConvolutionMathType"));
  const size_t mark = scratch.mark();
  void* workspace = nullptr;
  if (plan.memory > 0) {
    Expected<void*> ws = scratch.allocate(plan.memory);
    if (!ws) return ws.status().with_context("conv3d workspace");
    workspace = *ws;
  }
  const float one = 1.0f, zero = 0.0f;
  Status s = cudnn_check(cudnnConvolutionForward(d.handle, &one, d.x, x.raw_data(), d.w, w.raw_data(), d.conv,
                                                 plan.algo, workspace, plan.memory, &zero, d.y,
                                                 y.raw_data()),
                         "cudnnConvolutionForward");
  if (s.is_ok() && bias.defined()) {
    const int bd[5] = {1, static_cast<int>(Cout), 1, 1, 1}, bs[5] = {static_cast<int>(Cout), 1, 1, 1, 1};
    // (The same descriptor serves both layouts: a bias has one element per channel.)
    s = cudnn_check(cudnnSetTensorNdDescriptor(d.bias, CUDNN_DATA_FLOAT, 5, bd, bs), "conv3d bias desc");
    if (s.is_ok())
      s = cudnn_check(cudnnAddTensor(d.handle, &one, d.bias, bias.raw_data(), &one, d.y, y.raw_data()),
                      "cudnnAddTensor (conv3d bias)");
  }
  // The workspace may be reused by the next call's enqueued work only: the stream orders them.
  scratch.reset(mark);
  return s;
}

}  // namespace orochi::cuda
