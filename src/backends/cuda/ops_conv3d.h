// CUDA ops of the MiniMax-H3 video VAE encoder (a causal 3-D CNN in fp32), the GPU side of
// backends/cpu/ops_conv3d.h. Layout [C, T, H, W], one sample; contiguous f32 CUDA tensors, outputs
// passed in, work enqueued on `stream`; wrong shapes, dtypes or devices are caller bugs
// (OROCHI_CHECK), a failed launch or cuDNN call is a Status.
//
// The convolution is cuDNN's (legacy Nd API, NCDHW with N = 1). cuDNN pads symmetrically only, so
// the encoder's pads (reflect H/W, causal zero frames in front, the downsampler's one-sided pixel)
// are written by encoder_pad into a padded copy, and the convolution itself runs unpadded.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::cuda {

class DeviceArena;

// out [C, front_t + T, top + H + bottom, left + W + right] = x [C, T, H, W] with `front_t` zero
// frames in front and H, W reflect-padded (mirror without the edge; each pad < its side), as
// F.pad(reflect) then F.pad(constant, front) in the reference.
Status encoder_pad(const Tensor& x, int64_t front_t, int64_t top, int64_t bottom, int64_t left, int64_t right,
                   const Tensor& out, cudaStream_t stream);

// out = GroupNorm(x) per frame (statistics over one frame's C / groups channels x H x W, two-pass,
// fp32), then SiLU when `silu`: x, out [C, T, H, W]; weight, bias [C].
Status group_norm_frames(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups, float eps,
                         bool silu, const Tensor& out, cudaStream_t stream);

// acc += y elementwise (the resnet's residual + h), same shapes.
Status add_into(const Tensor& acc, const Tensor& y, cudaStream_t stream);

// Where a video tensor's channels are: [C, T, H, W] (NCDHW with N = 1, the reference's layout) or
// channels last, [T, H, W, C] (NDHWC), the layout cuDNN's tensor-core convolutions read without
// transposing. The ops below that take a layout see tensors of that physical shape.
enum class VideoLayout { kNcdhw, kNdhwc };
const char* layout_name(VideoLayout layout);

struct VideoDims {
  int64_t C = 0, T = 0, H = 0, W = 0;
};
// The logical sizes of a 4-D tensor in `layout`, and the physical shape of logical C x T x H x W.
VideoDims video_dims(const Tensor& t, VideoLayout layout);
Shape video_shape(VideoLayout layout, int64_t C, int64_t T, int64_t H, int64_t W);

// The fused encoder path's ops (32-bit indexing inside: fewer than 2^31 elements each).
//
// out (C' >= C channels) = x + bias[c] (bias optional) with `front_t` zero frames, H/W reflect-padded
// as encoder_pad, zero channels c >= C; x in `in_layout`, out in `out_layout`. With no pads it is a
// layout change (and the bias add) only.
Status encoder_pad_to(const Tensor& x, VideoLayout in_layout, const Tensor& bias, int64_t front_t, int64_t top,
                      int64_t bottom, int64_t left, int64_t right, const Tensor& out, VideoLayout out_layout,
                      cudaStream_t stream);
// A spatial tile of a device-resident clip, padded for conv_in: out [Co >= C, front_t + T, h + 2·pad,
// w + 2·pad] in `out_layout` = tile rows y0 + [0, h), columns x0 + [0, w) of clip [C, T, Hc, Wc]
// (NCDHW), reflect-padded by `pad` inside the tile (the reference encodes every tile on its own),
// with zero front frames and zero channels c >= C. The tile the host would slice, cut on the GPU.
Status encoder_tile_pad(const Tensor& clip, int64_t y0, int64_t x0, int64_t h, int64_t w, int64_t front_t, int64_t pad,
                        const Tensor& out, VideoLayout out_layout, cudaStream_t stream);
// The pad that follows a GroupNorm, fused into it: out [C, front + T, H + 2·pad, W + 2·pad] gets
// GroupNorm(x + in_bias[c]) per frame (+ SiLU) in its interior, the reflect border of `pad` (0 or 1)
// and `front` zero frames; x [C, T, H, W], both in `layout`; in_bias optional (a conv's bias
// folded into the norm that reads it: the same fp32 sum the reference normalizes).
// Channels last, the statistics' scratch (a few MiB at most) comes from `scratch`, released after.
Status group_norm_pad(const Tensor& x, const Tensor& in_bias, const Tensor& weight, const Tensor& bias, int64_t groups,
                      float eps, bool silu, VideoLayout layout, int64_t front, int64_t pad, const Tensor& out,
                      DeviceArena& scratch, cudaStream_t stream);
// out = (a + a_bias[c]) + (y + y_bias[c]) elementwise, every tensor of one shape in `layout`; a_bias,
// y, y_bias optional (left out of the sum when undefined). out may be a. The resnet's tail
// (shortcut(x) + conv2(h), each with its bias) and a conv's bias added in place.
Status bias_residual(const Tensor& a, const Tensor& a_bias, const Tensor& y, const Tensor& y_bias, VideoLayout layout,
                     const Tensor& out, cudaStream_t stream);

// fp32 convolutions: the reference runs torch with cudnn.allow_tf32 = True by default (TF32 tensor
// cores for fp32 convs); kF32 forbids them (CUDNN_FMA_MATH) for comparisons with the CPU.
enum class ConvMath { kTf32, kF32 };

// An unpadded 3-D convolution y = conv3d(x, w) + bias with strides, on one cuDNN handle bound to a
// stream. The algorithm is chosen once per shape and kept: cuDNN's heuristic first choice
// (deterministic: every run picks the same), or with autotuning the fastest when timed on the
// first call's tensors (faster, but two runs or GPUs may pick differently and differ in the last
// bits). Workspace comes from `scratch`, released after the call.
class Conv3dRunner {
 public:
  static Expected<std::unique_ptr<Conv3dRunner>> create(cudaStream_t stream, ConvMath math);
  ~Conv3dRunner();
  Conv3dRunner(const Conv3dRunner&) = delete;
  Conv3dRunner& operator=(const Conv3dRunner&) = delete;

  // x [Cin, T, H, W], w [Cout, Cin, kt, kh, kw], bias [Cout] (or undefined), y [Cout, To, Ho, Wo]
  // with To = (T − kt) / st + 1 and so on. Channels last (kNdhwc): x [T, H, W, Cin],
  // w [Cout, kt, kh, kw, Cin], y [To, Ho, Wo, Cout].
  Status forward(const Tensor& x, const Tensor& w, const Tensor& bias, int64_t stride_t, int64_t stride_hw,
                 const Tensor& y, DeviceArena& scratch, VideoLayout layout = VideoLayout::kNcdhw);
  ConvMath math() const { return math_; }
  // Off by default. Shapes already seen keep their algorithm.
  void set_autotune(bool on) { autotune_ = on; }

 private:
  Conv3dRunner() = default;
  struct Descriptors;
  std::unique_ptr<Descriptors> d_;
  ConvMath math_ = ConvMath::kTf32;
  bool autotune_ = false;
};

}  // namespace orochi::cuda
