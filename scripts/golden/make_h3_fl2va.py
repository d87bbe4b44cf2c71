#!/usr/bin/env python3
"""Golden generator for an fl2va request through diffusers' modular MiniMax-H3 pipeline (0.42.1, CPU, fp32).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_fl2va.py --out tests/data/h3_fl2va

Drives `MiniMaxH3Blocks` (the auto pipeline: before_encode -> vae_encoder -> denoise -> decode, the fl2va branch
chosen by `image`/`last_image`) with its `text_encoder` block removed: there is no tiny Qwen3-VL conditioner, so
`prompt_embeds` and `text_token_tags` are given as inputs (the fl2va presentation is covered by h3_presentation).
Components: the tiny transformer of tests/data/h3_tiny, a tiny video VAE of the real geometry (16x spatial, 4x
temporal, 4 latent channels) and a tiny audio VAE (hop 800, 6 latent channels), seeded random weights, written here.

Noise: the request noise is Orochi's counter-based Philox (scripts/device/philox_torch.py, the port of
core/random) under SEED: keyframe i from stream 1000 + i (injected by replacing the condition step's draw), the
target video from stream 11 (`latents`), the audio from stream 12 (`audio_latents`). The keyframe posterior is the
pipeline's own seed-42 CPU generator. Two PNG keyframes of different aspect are made here: the first stretched onto
the 64x64 canvas, the last cover-cropped. 124 frames (the shortest request), 4 grid points (3 evaluations).

Writes --out/{first.png,last.png,vae/,audio_vae/,golden.safetensors}; golden holds the canvas keyframes, the
condition latents, the injected noise, the first forward's packed inputs (rows, positions, tags, indices), each
forward's timestep/timestep_indices and input rows, the final latents, and slices + per-frame means of the decode.
"""

import argparse
import json
import sys
from pathlib import Path

import diffusers
import numpy as np
import torch
from PIL import Image
from diffusers import AutoencoderKLMiniMaxH3, AutoencoderKLMiniMaxH3Audio, MiniMaxH3Scheduler, MiniMaxH3Transformer3DModel
from diffusers.modular_pipelines.minimax_h3 import before_denoise
from diffusers.modular_pipelines.minimax_h3.modular_blocks_minimax_h3 import MiniMaxH3Blocks
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))
from golden_io import print_sizes, save_golden  # noqa: E402
from philox_torch import normal_tensor  # noqa: E402

SEED = 20261201
WEIGHT_SEED = 123
HEIGHT, WIDTH, FRAMES = 64, 64, 124
NUM_INFERENCE_STEPS = 4
TEXT_ROWS = 6
VIDEO_STREAM, AUDIO_STREAM, CONDITION_STREAM = 11, 12, 1000
SLICE = 2048  # audio samples kept at each end

VAE_CONFIG = dict(block_out_channels=[4, 4, 8, 8], clip_length=17, decoder_attention_head_dim=8, decoder_ffn_mult=2,
                  decoder_norm_eps=1e-5, decoder_num_attention_heads=1, decoder_num_layers=1,
                  decoder_num_register_tokens=2, decoder_rope_dim_ratio=0.75, decoder_rope_theta=100.0, in_channels=3,
                  latent_channels=4, latents_mean=[0.1, -0.2, 0.05, 0.3], latents_std=[0.9, 1.3, 0.7, 1.1],
                  layers_per_block=1, norm_eps=1e-6, norm_num_groups=4, out_channels=3,
                  spatial_downsample_factors=[2, 2, 2, 2], spatial_padding_mode="reflect",
                  temporal_downsample_factors=[1, 2, 2, 1], token_drop=3)
AUDIO_VAE_CONFIG = dict(decoder_dim=16, decoder_kernel_sizes=[16, 20, 20], decoder_rates=[8, 10, 10], encoder_dim=4,
                        encoder_rates=[8, 10, 10], latent_channels=6, latent_dim=12, num_attention_heads=2,
                        latents_mean=[-0.3, 0.2, 0.1, 0.5, -0.1, 0.0], latents_std=[0.8, 1.1, 0.9, 1.2, 0.7, 1.0],
                        resblock_dilation_sizes=[[1, 3], [1, 3]], resblock_kernel_sizes=[3, 7], sampling_rate=32000)


def picture(w: int, h: int, salt: int) -> Image.Image:
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([(x * 255) // w, (y * 255) // h, np.where(x > w // 2, 200 - salt, 40 + salt)], -1)
    rgb = (rgb + ((x * 7 + y * 13 + salt) % 23)[..., None]).clip(0, 255).astype(np.uint8)
    return Image.fromarray(rgb, "RGB")


def save_model(model, folder: Path):
    """config.json + one fp32 safetensors, as diffusers' save_pretrained lays them out (metadata canonical)."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = dict(model.config)
    cfg = {"_class_name": type(model).__name__, "_diffusers_version": diffusers.__version__,
           **{k: v for k, v in sorted(cfg.items()) if not k.startswith("_")}}
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_golden(folder / "diffusion_pytorch_model.safetensors", state, {"format": "pt"})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--transformer", type=Path, default=Path("tests/data/h3_tiny/transformer"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)

    config = {k: v for k, v in json.loads((args.transformer / "config.json").read_text()).items() if k[0] != "_"}
    transformer = MiniMaxH3Transformer3DModel(**config).float().eval()
    state = {}
    for shard in sorted(args.transformer.glob("*.safetensors")):
        state.update(load_file(shard))
    transformer.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    torch.manual_seed(WEIGHT_SEED)
    vae = AutoencoderKLMiniMaxH3(**VAE_CONFIG).float().eval()
    audio_vae = AutoencoderKLMiniMaxH3Audio(**AUDIO_VAE_CONFIG).float().eval()
    save_model(vae, args.out / "vae")
    save_model(audio_vae, args.out / "audio_vae")

    first, last = picture(80, 48, 0), picture(48, 72, 30)
    first.save(args.out / "first.png")
    last.save(args.out / "last.png")
    first, last = Image.open(args.out / "first.png"), Image.open(args.out / "last.png")

    blocks = MiniMaxH3Blocks()
    blocks.sub_blocks.pop("text_encoder")
    pipe = blocks.init_pipeline()
    pipe.update_components(transformer=transformer, vae=vae, audio_vae=audio_vae,
                           scheduler=MiniMaxH3Scheduler(shift=12.0), audio_scheduler=MiniMaxH3Scheduler(shift=3.0))

    C, T, lh, lw = 4, 37, HEIGHT // 16, WIDTH // 16
    A = 207
    video_noise = normal_tensor((C, T, lh, lw), SEED, VIDEO_STREAM)
    audio_noise = normal_tensor((2 * A, config["audio_in_channels"]), SEED, AUDIO_STREAM)  # channel-major rows
    cond_noise = [normal_tensor((C, 1, lh, lw), SEED, CONDITION_STREAM + i) for i in range(2)]
    queue = [n[None] for n in cond_noise]
    draws = []

    def injected_randn(shape, generator=None, device=None, dtype=None, layout=None):
        noise = queue.pop(0)
        assert tuple(noise.shape) == tuple(shape), (noise.shape, shape)
        draws.append(noise)
        return noise.to(dtype or torch.float32)

    before_denoise.randn_tensor = injected_randn

    forwards = []

    def hook(module, args_, kwargs):
        forwards.append({k: (v.detach().clone() if torch.is_tensor(v) else v) for k, v in kwargs.items()})

    handle = transformer.register_forward_pre_hook(hook, with_kwargs=True)
    text = normal_tensor((TEXT_ROWS, config["text_dim"]), SEED, 5)
    tags = torch.ones(TEXT_ROWS, dtype=torch.long)  # all text: the C++ layout tags every text row 1
    out = pipe(image=first, last_image=last, height=HEIGHT, width=WIDTH, num_frames=FRAMES,
               num_inference_steps=NUM_INFERENCE_STEPS, prompt_embeds=text[None], text_token_tags=tags,
               latents=video_noise[None].clone(), audio_latents=audio_noise.reshape(2, A, -1).permute(0, 2, 1).clone(),  # the pipeline's rows alias its input
               generator=torch.Generator().manual_seed(0), output_type="pt",
               output=["videos", "audio", "latents", "audio_latents", "keyframes", "condition_latents"])
    handle.remove()
    assert not queue and len(draws) == 2, "the condition step must draw once per keyframe"

    g = {}
    for i, k in enumerate(out["keyframes"]):
        g[f"keyframe.{i}"] = torch.from_numpy(np.array(k)).contiguous()  # u8 [H, W, 3] on the canvas
    for i, z in enumerate(out["condition_latents"]):
        g[f"condition_latents.{i}"] = z[0].float()  # [C, 1, h, w]
        g[f"condition_noise.{i}"] = cond_noise[i]
    g["video_noise"], g["audio_noise"], g["text"] = video_noise, audio_noise, text
    f0 = forwards[0]
    for name in ("position_ids", "token_tags", "video_indices", "audio_indices", "text_indices"):
        g[f"packed.{name}"] = f0[name].contiguous()
    for i, f in enumerate(forwards):
        g[f"step.{i}.video_rows"] = f["hidden_states"][0].contiguous()
        g[f"step.{i}.audio_rows"] = f["audio_hidden_states"][0].contiguous()
        g[f"step.{i}.timestep"] = f["timestep"].float().contiguous()
        g[f"step.{i}.timestep_indices"] = f["timestep_indices"].contiguous()
    g["final.video_latents"] = out["latents"][0].float().contiguous()  # [C, T, h, w]
    g["final.audio_latents"] = out["audio_latents"].float().contiguous()  # [2, C, A]
    video = out["videos"]
    video = video[0] if isinstance(video, (list, tuple)) or video.ndim == 5 else video  # [F, 3, H, W]
    video = video.float()
    assert video.shape == (FRAMES, 3, HEIGHT, WIDTH), video.shape
    g["decode.frames_mean"] = video.mean(dim=(2, 3)).contiguous()  # [F, 3]
    for f in (0, FRAMES - 1):
        g[f"decode.frame.{f}"] = video[f].contiguous()
    audio = out["audio"].float()[0]  # [2, samples]
    g["decode.audio_head"] = audio[:, :SLICE].contiguous()
    g["decode.audio_tail"] = audio[:, -SLICE:].contiguous()
    g["decode.audio_mean_per_latent"] = audio.reshape(2, -1, 800).mean(-1).contiguous()
    meta = {"torch_version": torch.__version__, "diffusers_version": diffusers.__version__, "seed": str(SEED),
            "layout": json.dumps(dict(height=HEIGHT, width=WIDTH, frames=FRAMES, text=TEXT_ROWS,
                                      num_inference_steps=NUM_INFERENCE_STEPS, evaluations=len(forwards),
                                      audio_samples=audio.shape[-1]))}
    save_golden(args.out / "golden.safetensors", g, meta)
    print(f"{len(forwards)} forwards, S = {f0['position_ids'].shape[0]}, video {tuple(video.shape)}, audio {tuple(audio.shape)}")
    print_sizes(args.out)


if __name__ == "__main__":
    main()
