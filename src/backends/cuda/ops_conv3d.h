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
  // with To = (T − kt) / st + 1 and so on.
  Status forward(const Tensor& x, const Tensor& w, const Tensor& bias, int64_t stride_t, int64_t stride_hw,
                 const Tensor& y, DeviceArena& scratch);
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
