#!/usr/bin/env python3
"""Golden generator for a ref2va request through diffusers' modular MiniMax-H3 pipeline (0.42.1, CPU, fp32).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt, with PyAV and torchaudio):

    python scripts/golden/make_h3_ref2va.py --out tests/data/h3_ref2va

Drives `MiniMaxH3Blocks` (the auto pipeline: before_encode -> vae_encoder -> denoise -> decode, the ref2va branch
chosen by `references`) with its `text_encoder` block removed: there is no tiny Qwen3-VL conditioner, so
`prompt_embeds` and `text_token_tags` are given (the ref2va presentation is covered by h3_presentation; the tags
here mix text 1 and vision 0). Components: the tiny transformer of tests/data/h3_tiny as `transformer_ref`, and the
tiny video VAE (4 latent channels) and audio VAE (hop 800, 6 latent channels) of tests/data/h3_fl2va, so no new
weights are committed. The pipeline's reference geometry is set small through its configs: canvas_short_edge 64,
canvas_max_pixels 64*112 (a video's own canvas) and reference_image_short_edge 64 (the images).

The request, in this order (the media are made here, deterministic):
  1. image_wide.png, 80x48 -> 96x64 (LANCZOS, 64 short edge);
  2. image_tall.png, 48x72 -> 64x96;
  3. video.mov: 36 frames of 80x48 H.264 (yuv420p) at 30 fps -> 29 frames at 24 fps -> 96x64 (its own canvas),
     snapped down to 22 frames for the VAE (7 latents); its mono 44.1 kHz soundtrack (1.2 s, PCM s16: lossless, so
     our FFmpeg and PyAV's decode it to the same samples) -> stereo 32 kHz, 48 latents;
  4. clip.wav: 1.5 s stereo 16 kHz (s16) -> 32 kHz, 30 latents.
Target 64x64, 124 frames, 4 grid points (3 evaluations).

Noise: Orochi's counter-based Philox (scripts/device/philox_torch.py) under SEED: visual reference i (images and
videos in request order) from stream 1000 + i (injected by replacing the condition step's draw), the target video
from stream 11 (`latents`), the target audio from stream 12 (`audio_latents`, channel-major rows). The posterior of
every visual reference is the pipeline's own seed-42 CPU generator.

Writes --out/{image_wide.png,image_tall.png,video.mov,clip.wav,golden.safetensors}. golden holds the normalized
references (image pixels, the video frames' size + FNV-1a 64 + two frames, the 32 kHz waveforms' heads and
per-hop means), the encoded condition latents and audio condition rows, the injected noise, the text features and
tags, the first forward's packed inputs (f64 positions, tags, indices), each forward's timestep/timestep_indices and
input rows, the final latents, and slices + per-frame means of the decode.
"""

import argparse
import json
import sys
import wave
from pathlib import Path

import av
import diffusers
import numpy as np
import torch
from PIL import Image
from diffusers import AutoencoderKLMiniMaxH3, AutoencoderKLMiniMaxH3Audio, MiniMaxH3Scheduler, MiniMaxH3Transformer3DModel
from diffusers.modular_pipelines.minimax_h3 import before_denoise
from diffusers.modular_pipelines.minimax_h3.modular_blocks_minimax_h3 import MiniMaxH3Blocks
from diffusers.modular_pipelines.minimax_h3.references import (
    MiniMaxH3AudioReference,
    MiniMaxH3ImageReference,
    MiniMaxH3VideoReference,
)
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))
from golden_io import print_sizes, save_golden  # noqa: E402
from philox_torch import normal_tensor  # noqa: E402

SEED = 20261202
HEIGHT, WIDTH, FRAMES = 64, 64, 124
NUM_INFERENCE_STEPS = 4
TEXT_TAGS = [1, 1, 0, 0, 0, 1]  # a vision block's rows (0) among text rows (1), as a presentation has them
VIDEO_STREAM, AUDIO_STREAM, CONDITION_STREAM, TEXT_STREAM = 11, 12, 1000, 5
SLICE = 2048  # audio samples kept at each end
CONFIGS = dict(canvas_short_edge=64, canvas_max_pixels=64 * 112, reference_image_short_edge=64)


def fnv1a64(data: bytes) -> torch.Tensor:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return torch.tensor([h - (1 << 64) if h >= (1 << 63) else h], dtype=torch.int64)  # two's complement


def picture(w: int, h: int, salt: int) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([(x * 255) // w, (y * 255) // h, np.where(x > w // 2, 200 - salt, 40 + salt)], -1)
    return (rgb + ((x * 7 + y * 13 + salt) % 23)[..., None]).clip(0, 255).astype(np.uint8)


def tone(rate: int, channels: int, seconds: float, freq: float) -> np.ndarray:
    t = np.arange(int(round(rate * seconds))) / rate
    chans = [0.5 * np.sin(2 * np.pi * freq * (c + 1) * t) * np.exp(-t) + 0.1 * np.sin(2 * np.pi * 97 * t)
             for c in range(channels)]
    return (np.stack(chans) * 32767).round().astype(np.int16)  # [C, N]


def write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(samples.shape[0])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.T.tobytes())


def write_video(path: Path) -> None:
    """36 frames of 80x48 at 30 fps (H.264 yuv420p) with 1.2 s of mono 44.1 kHz PCM s16, in a QuickTime file."""
    with av.open(str(path), "w", format="mov", options={"fflags": "+bitexact"}) as out:
        v = out.add_stream("libx264", rate=30)
        v.width, v.height, v.pix_fmt = 80, 48, "yuv420p"
        v.codec_context.thread_count = 1
        v.options = {"crf": "18", "threads": "1"}
        a = out.add_stream("pcm_s16le", rate=44100, layout="mono")
        for i in range(36):
            frame = av.VideoFrame.from_ndarray(np.roll(picture(80, 48, 5 + i), 2 * i, axis=1), format="rgb24")
            frame.pts = i
            for p in v.encode(frame):
                out.mux(p)
        for p in v.encode(None):
            out.mux(p)
        pcm = tone(44100, 1, 1.2, 330.0)
        for start in range(0, pcm.shape[1], 1024):
            frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(pcm[:, start:start + 1024]), format="s16",
                                               layout="mono")
            frame.sample_rate = 44100
            frame.pts = start
            for p in a.encode(frame):
                out.mux(p)
        for p in a.encode(None):
            out.mux(p)


def load_model(cls, folder: Path):
    config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k[0] != "_"}
    model = cls(**config).float().eval()
    state = {}
    for shard in sorted(folder.glob("*.safetensors")):
        state.update(load_file(shard))
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model, config


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--transformer", type=Path, default=Path("tests/data/h3_tiny/transformer"))
    ap.add_argument("--vaes", type=Path, default=Path("tests/data/h3_fl2va"), help="holds vae/ and audio_vae/")
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)

    transformer, config = load_model(MiniMaxH3Transformer3DModel, args.transformer)
    vae, _ = load_model(AutoencoderKLMiniMaxH3, args.vaes / "vae")
    audio_vae, _ = load_model(AutoencoderKLMiniMaxH3Audio, args.vaes / "audio_vae")

    Image.fromarray(picture(80, 48, 0)).save(args.out / "image_wide.png")
    Image.fromarray(picture(48, 72, 30)).save(args.out / "image_tall.png")
    write_video(args.out / "video.mov")
    write_wav(args.out / "clip.wav", tone(16000, 2, 1.5, 220.0), 16000)
    references = [
        MiniMaxH3ImageReference.from_file(args.out / "image_wide.png"),
        MiniMaxH3ImageReference.from_file(args.out / "image_tall.png"),
        MiniMaxH3VideoReference.from_file(args.out / "video.mov"),
        MiniMaxH3AudioReference.from_file(args.out / "clip.wav"),
    ]
    assert references[2].fps == 30.0 and references[2].sample_rate == 44100 and references[2].audio.shape[0] == 1

    blocks = MiniMaxH3Blocks()
    blocks.sub_blocks.pop("text_encoder")
    pipe = blocks.init_pipeline()
    pipe.update_components(transformer_ref=transformer, vae=vae, audio_vae=audio_vae,
                           scheduler=MiniMaxH3Scheduler(shift=12.0), audio_scheduler=MiniMaxH3Scheduler(shift=3.0),
                           **CONFIGS)
    for key, value in CONFIGS.items():
        assert pipe.config[key] == value, (key, pipe.config[key])

    C, T, lh, lw = 4, 37, HEIGHT // 16, WIDTH // 16
    A = 207
    video_noise = normal_tensor((C, T, lh, lw), SEED, VIDEO_STREAM)
    audio_noise = normal_tensor((2 * A, config["audio_in_channels"]), SEED, AUDIO_STREAM)  # channel-major rows
    draws = []

    def injected_randn(shape, generator=None, device=None, dtype=None, layout=None):
        # [1, C, T_r, h, w] per visual reference, in request order.
        noise = normal_tensor(tuple(shape[1:]), SEED, CONDITION_STREAM + len(draws))[None]
        draws.append(noise[0])
        return noise.to(dtype or torch.float32)

    before_denoise.randn_tensor = injected_randn

    forwards = []

    def hook(module, args_, kwargs):
        forwards.append({k: (v.detach().clone() if torch.is_tensor(v) else v) for k, v in kwargs.items()})

    handle = transformer.register_forward_pre_hook(hook, with_kwargs=True)
    text = normal_tensor((len(TEXT_TAGS), config["text_dim"]), SEED, TEXT_STREAM)
    tags = torch.tensor(TEXT_TAGS, dtype=torch.long)
    out = pipe(references=references, height=HEIGHT, width=WIDTH, num_frames=FRAMES,
               num_inference_steps=NUM_INFERENCE_STEPS, prompt_embeds=text[None], text_token_tags=tags,
               latents=video_noise[None].clone(), audio_latents=audio_noise.reshape(2, A, -1).permute(0, 2, 1).clone(),
               generator=torch.Generator().manual_seed(0), output_type="pt",
               output=["videos", "audio", "latents", "audio_latents", "normalized_references", "condition_latents",
                       "audio_condition_latents"])
    handle.remove()
    assert len(draws) == 3, "the condition step draws once per visual reference"

    g = {"text": text, "text_tags": tags, "video_noise": video_noise, "audio_noise": audio_noise}
    normalized = out["normalized_references"]
    for i in (0, 1):
        g[f"reference.{i}.image"] = torch.from_numpy(np.array(normalized[i].image)).contiguous()  # u8 [H, W, 3]
    frames = np.ascontiguousarray(normalized[2].frames)  # u8 [F, H, W, 3] at 24 fps on its own canvas
    g["reference.2.frames_shape"] = torch.tensor(frames.shape, dtype=torch.int64)
    g["reference.2.frames_fnv"] = fnv1a64(frames.tobytes())
    for f in (0, frames.shape[0] - 1):
        g[f"reference.2.frame.{f}"] = torch.from_numpy(frames[f].copy())
    for i, ref in ((2, normalized[2]), (3, normalized[3])):
        wav = ref.audio.float()  # [2, N] at 32 kHz
        hop = wav.shape[1] // 800 * 800
        g[f"reference.{i}.waveform_shape"] = torch.tensor(wav.shape, dtype=torch.int64)
        g[f"reference.{i}.waveform_head"] = wav[:, :SLICE].contiguous()
        g[f"reference.{i}.waveform_mean_per_hop"] = wav[:, :hop].reshape(2, -1, 800).mean(-1).contiguous()
    for i, z in enumerate(out["condition_latents"]):
        g[f"condition_latents.{i}"] = z[0].float().contiguous()  # [C, T_r, h, w]
        g[f"condition_noise.{i}"] = draws[i].contiguous()
    for i, rows in enumerate(out["audio_condition_latents"]):
        g[f"audio_condition_rows.{i}"] = rows.float().contiguous()  # [2a, C_a], channel-major
    f0 = forwards[0]
    assert f0["position_ids"].dtype == torch.float64
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
    meta = {"torch_version": torch.__version__, "diffusers_version": diffusers.__version__, "av_version": av.__version__,
            "seed": str(SEED),
            "layout": json.dumps(dict(height=HEIGHT, width=WIDTH, frames=FRAMES, text=len(TEXT_TAGS), **CONFIGS,
                                      num_inference_steps=NUM_INFERENCE_STEPS, evaluations=len(forwards),
                                      rows=int(f0["position_ids"].shape[0])))}
    save_golden(args.out / "golden.safetensors", g, meta)
    print(f"{len(forwards)} forwards, S = {f0['position_ids'].shape[0]}, condition latents "
          f"{[tuple(z.shape) for z in out['condition_latents']]}, audio rows "
          f"{[tuple(r.shape) for r in out['audio_condition_latents']]}, video {tuple(video.shape)}, "
          f"audio {tuple(audio.shape)}")
    print_sizes(args.out)


if __name__ == "__main__":
    main()
