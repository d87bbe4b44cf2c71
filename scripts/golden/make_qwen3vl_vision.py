#!/usr/bin/env python3
"""Golden generator for Qwen3-VL's image/video processors and vision tower (MiniMax-H3's conditioner), fp32, CPU,
deterministic.

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_qwen3vl_vision.py --out tests/data/qwen3vl_vision

Writes into --out:
  text_encoder/          `Qwen3VLForConditionalGeneration.save_pretrained` of a tiny random model (config.json with its
                         vision_config, one safetensors file): the checkpoint's own key names (`model.visual.*`)
  processor.safetensors  transformers 5.24's torchvision-backend processors (`Qwen2VLImageProcessor`, the former
                         ...Fast, and `Qwen3VLVideoProcessor` with do_sample_frames=False) on RGB8 inputs, with patch 4
                         (factor 8) and small pixel limits so the goldens stay small; the resize is the real one:
    in.image.{0,1,2}          u8 [H, W, 3]  45x61 (downscaled), 24x40 (kept), 13x22 (upscaled)
    in.video                  u8 [3, 22, 30, 3]  an odd frame count (the last is repeated), resized to 24x32
    resized.image.{0,2}       u8 [h, w, 3]  torchvision's resize of images 0 and 2 alone (bicubic, antialias)
    resized.video             u8 [3, h, w, 3]
    images.pixel_values       f32 [N, 96]   images.grid_thw i64 [3, 3]
    videos.pixel_values       f32 [N, 96]   videos.grid_thw i64 [1, 3]
    clip.pixel_values         f32           image 2 with OpenAI CLIP's mean/std (the fused normalize's general case)
    smart_resize.*            the H3 processors' smart_resize (patch 16, its real pixel limits) on a list of sizes
    sample.{n}.indices / .timestamps   diffusers' `_sample_video_condition_frames` (24 -> 2 fps, pairs) for n frames
  golden.safetensors     `model.model.visual(pixel_values, grid_thw)` over images 0 and 2 and the video at once:
    in.pixel_values, in.grid_thw
    patch_embed               [N, hidden]   the Conv3d output
    pos_embed                 [N, hidden]   the interpolated position embeddings (vision_utils' taps and weights)
    rope.cos / rope.sin       [N, head_dim]
    blocks.{i}                [N, hidden]   each block's output
    deepstack.{k}             [M, out]      the DeepStack mergers' outputs, in block order
    merger                    [M, out]      the final merger's output (pooler_output)
    bf16.merger, bf16.deepstack.{k}   the same run with the tower and inputs in bfloat16 on the CPU (transformers'
                                      own bf16 result, for the GPU path's tolerance)

The model and processors come from transformers on PyPI, unmodified; nothing here copies their code.
"""

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import safetensors
import torchvision
import transformers
from safetensors.torch import load_file
from torchvision.transforms.v2 import functional as tvF

from golden_io import canonicalize_header, print_sizes, save_golden
from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration
from transformers.image_utils import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD
from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as image_smart_resize
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import smart_resize as video_smart_resize
from transformers.vision_utils import get_vision_interpolation_indices_and_weights

SEED = 20261201

TEXT_CONFIG = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    hidden_act="silu",
    max_position_embeddings=256,
    rms_norm_eps=1e-6,
    attention_bias=False,
    rope_scaling=dict(rope_type="default", mrope_section=[4, 2, 2], mrope_interleaved=True),
    rope_theta=5000000.0,
)

# head_dim 8: a multiple of 4 for the 2-D RoPE and of 8 for cuDNN's attention (the GPU test reuses this model).
VISION_CONFIG = dict(
    depth=4,
    hidden_size=16,
    intermediate_size=32,
    num_heads=2,
    patch_size=4,
    temporal_patch_size=2,
    spatial_merge_size=2,
    out_hidden_size=32,
    num_position_embeddings=36,
    deepstack_visual_indexes=[0, 2, 3],
    hidden_act="gelu_pytorch_tanh",
)

# The processors at patch 4 (factor 8) with pixel limits that make image 0 shrink, image 1 stay and image 2 grow.
PROCESSOR = dict(patch_size=4, temporal_patch_size=2, merge_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
IMAGE_SIZE = {"shortest_edge": 400, "longest_edge": 1920}
VIDEO_SIZE = {"shortest_edge": 256, "longest_edge": 4 * 24 * 32}
IMAGE_SHAPES = [(45, 61), (24, 40), (13, 22)]
VIDEO_SHAPE = (3, 22, 30)

# MiniMax-H3's processor/ settings (REF2VA.md §4.1) for the smart_resize table.
H3_IMAGE_LIMITS = (65536, 16777216)
H3_VIDEO_LIMITS = (4096, 25165824)
SMART_RESIZE_SIZES = [(768, 1344), (2048, 3648), (720, 1280), (1080, 1920), (3000, 4000), (100, 100), (17, 3001),
                      (4000, 6000), (255, 257), (2048, 8192), (33, 47), (1216, 704)]
SMART_RESIZE_FRAMES = [2, 3, 11, 25, 26, 29]
SAMPLE_FRAME_COUNTS = [13, 14, 24, 25, 124, 125, 300, 345]


def randomize_(model: nn.Module, gen: torch.Generator) -> None:
    """Every parameter gets a well-conditioned random value (the default init is tiny and zeroes biases)."""
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "norm" in name.split(".")[-2] or name.endswith("layernorm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
            elif p.ndim >= 2 and "embed_tokens" not in name:
                fan_in = int(np.prod(p.shape[1:]))
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=gen))


def make_inputs(gen: torch.Generator):
    """Random RGB8 pictures: noise exercises the resize's clamping and every fixed-point tap."""
    images = [torch.randint(0, 256, (h, w, 3), generator=gen, dtype=torch.uint8) for h, w in IMAGE_SHAPES]
    video = torch.randint(0, 256, (*VIDEO_SHAPE, 3), generator=gen, dtype=torch.uint8)
    return images, video


def torchvision_resize(hwc: torch.Tensor, size) -> torch.Tensor:
    """The processors' resize on its own: uint8 CHW, bicubic, antialias (torchvision's default)."""
    chw = hwc.permute(2, 0, 1).contiguous()
    out = tvF.resize(chw, list(size), interpolation=tvF.InterpolationMode.BICUBIC, antialias=True)
    return out.permute(1, 2, 0).contiguous()


def run_processors(images, video) -> dict:
    g = {}
    image_proc = Qwen2VLImageProcessor(size=IMAGE_SIZE, **PROCESSOR)
    out = image_proc(images=[im.numpy() for im in images], return_tensors="pt", input_data_format="channels_last")
    g["images.pixel_values"], g["images.grid_thw"] = out["pixel_values"], out["image_grid_thw"]
    clip_proc = Qwen2VLImageProcessor(size=IMAGE_SIZE, **{**PROCESSOR, "image_mean": OPENAI_CLIP_MEAN,
                                                           "image_std": OPENAI_CLIP_STD})
    g["clip.pixel_values"] = clip_proc(images=[images[2].numpy()], return_tensors="pt",
                                       input_data_format="channels_last")["pixel_values"]
    video_proc = Qwen3VLVideoProcessor(size=VIDEO_SIZE, **PROCESSOR)
    vout = video_proc(videos=[video.numpy()], do_sample_frames=False, cap_pixels_per_frame=False, return_tensors="pt",
                      input_data_format="channels_last")
    g["videos.pixel_values"], g["videos.grid_thw"] = vout["pixel_values_videos"], vout["video_grid_thw"]

    for i, im in enumerate(images):
        g[f"in.image.{i}"] = im
        h, w = image_smart_resize(im.shape[0], im.shape[1], factor=8, min_pixels=IMAGE_SIZE["shortest_edge"],
                                  max_pixels=IMAGE_SIZE["longest_edge"])
        if (h, w) != tuple(im.shape[:2]):
            g[f"resized.image.{i}"] = torchvision_resize(im, (h, w))
    g["in.video"] = video
    h, w = video_smart_resize(VIDEO_SHAPE[0], VIDEO_SHAPE[1], VIDEO_SHAPE[2], temporal_factor=2, factor=8,
                              min_pixels=VIDEO_SIZE["shortest_edge"], max_pixels=VIDEO_SIZE["longest_edge"])
    g["resized.video"] = torch.stack([torchvision_resize(f, (h, w)) for f in video])

    # The resize changes sizes in both directions and keeps image 1; the video pads its odd frame count.
    grids = g["images.grid_thw"].tolist()
    assert grids == [[1, 8, 12], [1, 6, 10], [1, 4, 8]], grids
    assert g["videos.grid_thw"].tolist() == [[2, 6, 8]], g["videos.grid_thw"]
    assert "resized.image.1" not in g and g["resized.image.0"].shape == (32, 48, 3)
    return g


def smart_resize_table() -> dict:
    sizes = torch.tensor(SMART_RESIZE_SIZES, dtype=torch.int64)
    image = [image_smart_resize(h, w, factor=32, min_pixels=H3_IMAGE_LIMITS[0], max_pixels=H3_IMAGE_LIMITS[1])
             for h, w in SMART_RESIZE_SIZES]
    video = [[video_smart_resize(n, h, w, temporal_factor=2, factor=32, min_pixels=H3_VIDEO_LIMITS[0],
                                 max_pixels=H3_VIDEO_LIMITS[1]) for h, w in SMART_RESIZE_SIZES]
             for n in SMART_RESIZE_FRAMES]
    return {"smart_resize.sizes": sizes, "smart_resize.frames": torch.tensor(SMART_RESIZE_FRAMES, dtype=torch.int64),
            "smart_resize.image": torch.tensor(image, dtype=torch.int64),
            "smart_resize.video": torch.tensor(video, dtype=torch.int64)}


def frame_sampling_table() -> dict:
    from diffusers.modular_pipelines.minimax_h3.encoders import MiniMaxH3Ref2VATextEncoderStep

    g = {}
    for n in SAMPLE_FRAME_COUNTS:
        frames = np.zeros((n, 1, 1, 3), dtype=np.uint8)
        frames[:, 0, 0, 0] = np.arange(n) % 256
        frames[:, 0, 0, 1] = np.arange(n) // 256
        sampled, stamps = MiniMaxH3Ref2VATextEncoderStep._sample_video_condition_frames(frames, 24.0, 2.0, 2)
        g[f"sample.{n}.indices"] = torch.tensor([int(f[0, 0, 0]) + 256 * int(f[0, 0, 1]) for f in sampled],
                                                dtype=torch.int64)
        g[f"sample.{n}.timestamps"] = torch.tensor(stamps, dtype=torch.float64)
    assert g["sample.124.timestamps"].tolist() == [0.25, 1.25, 2.25, 3.25, 4.25, 5.0]
    return g


def run_tower(visual, pixel_values, grid_thw) -> dict:
    cap = {}
    hooks = [visual.patch_embed.register_forward_hook(lambda m, a, o: cap.__setitem__("patch_embed", o.clone())),
             visual.rotary_pos_emb.register_forward_hook(
                 lambda m, a, o: cap.update({"rope.cos": o[0].clone(), "rope.sin": o[1].clone()})),
             visual.blocks[0].register_forward_pre_hook(lambda m, a: cap.__setitem__("block0_in", a[0].clone()))]
    for i, blk in enumerate(visual.blocks):
        hooks.append(blk.register_forward_hook(lambda m, a, o, i=i: cap.__setitem__(f"blocks.{i}", o.clone())))
    with torch.no_grad():
        out = visual(pixel_values, grid_thw=grid_thw)
    for h in hooks:
        h.remove()
    cap["merger"] = out.pooler_output.clone()
    for k, d in enumerate(out.deepstack_features):
        cap[f"deepstack.{k}"] = d.clone()
    return cap


def position_embeddings(visual, grid_thw) -> torch.Tensor:
    """The tower's interpolated position embeddings, from vision_utils' public taps as its forward uses them."""
    idx, wts = get_vision_interpolation_indices_and_weights(
        grid_thw, num_grid_per_side=visual.num_grid_per_side, mode=visual.interpolation_mode,
        align_corners=visual.interpolation_align_corners, spatial_merge_size=visual.config.spatial_merge_size)
    with torch.no_grad():
        return (visual.pos_embed(idx) * wts[:, :, None]).sum(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    assert torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"), "the uint8 resize golden is the AVX2 path"

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    tdir = out / "text_encoder"
    if tdir.exists():
        shutil.rmtree(tdir)

    # 1. Processors.
    images, video = make_inputs(torch.Generator().manual_seed(SEED))
    proc = run_processors(images, video)
    proc.update(smart_resize_table())
    proc.update(frame_sampling_table())

    # 2. The tower: a tiny random Qwen3-VL, saved as a checkpoint.
    config = Qwen3VLConfig(text_config=TEXT_CONFIG, vision_config=VISION_CONFIG, tie_word_embeddings=False)
    model = Qwen3VLForConditionalGeneration(config).eval().to(torch.float32)
    randomize_(model, torch.Generator().manual_seed(SEED + 1))
    model.save_pretrained(tdir, safe_serialization=True)
    for s in tdir.glob("*.safetensors"):
        canonicalize_header(s)
    (tdir / "generation_config.json").unlink(missing_ok=True)
    saved = {}
    for s in tdir.glob("*.safetensors"):
        saved.update(load_file(s))
    sd = model.state_dict()
    assert set(saved) == set(sd) and all(torch.equal(saved[k], sd[k]) for k in sd)
    assert "model.visual.deepstack_merger_list.2.linear_fc2.bias" in saved
    assert json.loads((tdir / "config.json").read_text())["vision_config"]["depth"] == VISION_CONFIG["depth"]

    visual = model.model.visual
    # Images 0 and 2 (two sizes) and the video (two temporal blocks): four attention segments in one call.
    n0 = int(proc["images.grid_thw"][0].prod())
    n1 = int(proc["images.grid_thw"][1].prod())
    pixel_values = torch.cat([proc["images.pixel_values"][:n0], proc["images.pixel_values"][n0 + n1:],
                              proc["videos.pixel_values"]])
    grid_thw = torch.cat([proc["images.grid_thw"][0::2], proc["videos.grid_thw"]])
    cap = run_tower(visual, pixel_values, grid_thw)
    pe = position_embeddings(visual, grid_thw)
    assert torch.equal(cap["patch_embed"] + pe, cap["block0_in"]), "pos_embed is not what the forward adds"
    cap["pos_embed"] = pe
    del cap["block0_in"]

    # A run with one image alone must give that image's rows: attention is confined to each segment.
    alone = run_tower(visual, pixel_values[:n0], grid_thw[:1])
    m0 = n0 // 4
    assert torch.allclose(alone["merger"], cap["merger"][:m0], rtol=0, atol=1e-5)

    bvisual = visual.to(torch.bfloat16)
    bcap = run_tower(bvisual, pixel_values.to(torch.bfloat16), grid_thw)
    visual.to(torch.float32)

    golden = {"in.pixel_values": pixel_values, "in.grid_thw": grid_thw}
    golden.update({k: v for k, v in cap.items()})
    golden["bf16.merger"] = bcap["merger"].float()
    for k in range(len(VISION_CONFIG["deepstack_visual_indexes"])):
        golden[f"bf16.deepstack.{k}"] = bcap[f"deepstack.{k}"].float()
    for name in ("merger", "deepstack.0"):
        rel = ((golden["bf16." + name] - golden[name]).norm() / golden[name].norm()).item()
        print(f"transformers bf16 vs fp32 {name}: rel L2 {rel:.2e}")
    for i in range(1, VISION_CONFIG["depth"]):
        a, b = golden[f"blocks.{i - 1}"], golden[f"blocks.{i}"]
        rel = ((b - a).norm() / a.norm()).item()
        print(f"block {i}: rel change {rel:.3f}")
        assert rel > 0.05

    meta = {"torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "torchvision_version": torchvision.__version__, "safetensors_version": safetensors.__version__,
            "seed": str(SEED)}
    save_golden(out / "processor.safetensors", {k: v.contiguous() for k, v in proc.items()},
                {**meta, "processor": json.dumps(PROCESSOR), "image_size": json.dumps(IMAGE_SIZE),
                 "video_size": json.dumps(VIDEO_SIZE)})
    save_golden(out / "golden.safetensors", {k: v.contiguous() for k, v in golden.items()},
                {**meta, "call": "model.model.visual(pixel_values, grid_thw=grid_thw)"})
    print("image grids", proc["images.grid_thw"].tolist(), "video grid", proc["videos.grid_thw"].tolist())
    print_sizes(out)


if __name__ == "__main__":
    main()
