#!/usr/bin/env python3
"""Golden of a whole fl2va request on a tiny checkpoint, prompt included (issue 23), diffusers 0.42.1, CPU, fp32.

make_h3_fl2va.py drives `MiniMaxH3Blocks` with its text-encoder block removed (prompt_embeds given); this one keeps it:
the prompt and the two keyframes go through `MiniMaxH3FL2VATextEncoderStep` with its real conditioner call, so the
golden covers what the engine does on a checkpoint (tests/support/tiny_checkpoint.h): the keyframes put on the
canvas once, their pixels read by both the Qwen3-VL image processor and the video VAE encoder, the presentation's
per-row tags in the packed layout, then the loop and the decodes. No new weights: the transformer of
tests/data/h3_tiny, the VAEs and keyframe PNGs of tests/data/h3_fl2va, the conditioner and processor/ of
tests/data/h3_fl2va_prompt (features read after layer 2), the tokenizer tests/data/tokenizer/qwen_bpe. The request
is make_h3_fl2va.py's (64x64, 124 frames, num_inference_steps 4, its seed and Orochi's Philox noise injected).

Writes --out/golden.safetensors: token_ids, text_token_tags, prompt_embeds [L, 8], packed.token_tags,
final.video_latents, final.audio_latents, decode.frames_mean, decode.frame.{0,123}, decode.audio_head,
decode.audio_mean_per_latent.

Run (from the repository root; the output is byte-identical from run to run):

    python scripts/golden/make_h3_fl2va_request.py --out tests/data/h3_fl2va_request
"""

import argparse
import json
import sys
from pathlib import Path

import diffusers
import torch
import transformers
from PIL import Image
from diffusers import AutoencoderKLMiniMaxH3, AutoencoderKLMiniMaxH3Audio, MiniMaxH3Scheduler, MiniMaxH3Transformer3DModel
from diffusers.modular_pipelines.minimax_h3 import before_denoise, encoders
from diffusers.modular_pipelines.minimax_h3.modular_blocks_minimax_h3 import MiniMaxH3Blocks
from safetensors.torch import load_file
from transformers import (Qwen2TokenizerFast, Qwen2VLImageProcessorFast, Qwen3VLForConditionalGeneration,
                          Qwen3VLProcessor)
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))
import make_h3_fl2va as base  # noqa: E402
from golden_io import print_sizes, save_golden  # noqa: E402
from philox_torch import normal_tensor  # noqa: E402

DATA = Path("tests/data")
PROMPT = "A red kite climbs over the dunes; a boy shouts <d>再高一点!</d> and the wind hums."
LAYER = 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)

    folder = DATA / "h3_tiny/transformer"
    config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k[0] != "_"}
    transformer = MiniMaxH3Transformer3DModel(**config).float().eval()
    state = {}
    for shard in sorted(folder.glob("*.safetensors")):
        state.update(load_file(shard))
    transformer.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    vae = AutoencoderKLMiniMaxH3.from_pretrained(DATA / "h3_fl2va/vae").float().eval()
    audio_vae = AutoencoderKLMiniMaxH3Audio.from_pretrained(DATA / "h3_fl2va/audio_vae").float().eval()

    tokenizer = Qwen2TokenizerFast(tokenizer_file=str(DATA / "tokenizer/qwen_bpe/tokenizer.json"))
    image_processor = Qwen2VLImageProcessorFast.from_pretrained(DATA / "h3_fl2va_prompt/processor")
    common = dict(patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    video_processor = Qwen3VLVideoProcessor(size={"shortest_edge": 4096, "longest_edge": 25165824}, **common)
    processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor)
    text_encoder = Qwen3VLForConditionalGeneration.from_pretrained(DATA / "h3_fl2va_prompt/text_encoder",
                                                                   dtype=torch.float32).eval()

    pipe = MiniMaxH3Blocks().init_pipeline()
    type(pipe).text_encoder_layer = property(lambda self: LAYER)  # the tiny stack's hidden_states[2]
    pipe.update_components(transformer=transformer, vae=vae, audio_vae=audio_vae, text_encoder=text_encoder,
                           tokenizer=tokenizer, processor=processor,
                           scheduler=MiniMaxH3Scheduler(shift=12.0), audio_scheduler=MiniMaxH3Scheduler(shift=3.0))

    C, T, lh, lw = 4, 37, base.HEIGHT // 16, base.WIDTH // 16
    A = 207
    video_noise = normal_tensor((C, T, lh, lw), base.SEED, base.VIDEO_STREAM)
    audio_noise = normal_tensor((2 * A, config["audio_in_channels"]), base.SEED, base.AUDIO_STREAM)
    queue = [normal_tensor((C, 1, lh, lw), base.SEED, base.CONDITION_STREAM + i)[None] for i in range(2)]

    def injected_randn(shape, generator=None, device=None, dtype=None, layout=None):
        noise = queue.pop(0)
        assert tuple(noise.shape) == tuple(shape), (noise.shape, shape)
        return noise.to(dtype or torch.float32)

    before_denoise.randn_tensor = injected_randn
    seen = {}
    original = encoders.get_qwen3vl_prompt_embeds

    def record(text_encoder_, proc, token_ids, vision_inputs=None, **kwargs):
        seen["token_ids"] = list(token_ids)
        embeds = original(text_encoder_, proc, token_ids, vision_inputs, **kwargs)
        seen["prompt_embeds"] = embeds[0].detach().float().contiguous()
        return embeds

    encoders.get_qwen3vl_prompt_embeds = record
    forwards = []
    handle = transformer.register_forward_pre_hook(
        lambda module, a, kw: forwards.append({"token_tags": kw["token_tags"].detach().clone()}), with_kwargs=True)
    first, last = Image.open(DATA / "h3_fl2va/first.png"), Image.open(DATA / "h3_fl2va/last.png")
    out = pipe(prompt=PROMPT, image=first, last_image=last, height=base.HEIGHT, width=base.WIDTH,
               num_frames=base.FRAMES, num_inference_steps=base.NUM_INFERENCE_STEPS,
               latents=video_noise[None].clone(), audio_latents=audio_noise.reshape(2, A, -1).permute(0, 2, 1).clone(),
               generator=torch.Generator().manual_seed(0), output_type="pt",
               output=["videos", "audio", "latents", "audio_latents", "text_token_tags"])
    handle.remove()
    encoders.get_qwen3vl_prompt_embeds = original
    assert not queue, "the condition step must draw once per keyframe"
    tags = out["text_token_tags"].to(torch.int64)
    assert tags.numel() == len(seen["token_ids"]) == seen["prompt_embeds"].shape[0]
    assert (tags == 0).sum() == 2 * (4 + 2), "two 64x64 keyframes of 4 vision tokens each"

    g = {"token_ids": torch.tensor(seen["token_ids"], dtype=torch.int64), "text_token_tags": tags,
         "prompt_embeds": seen["prompt_embeds"], "packed.token_tags": forwards[0]["token_tags"].contiguous(),
         "final.video_latents": out["latents"][0].float().contiguous(),
         "final.audio_latents": out["audio_latents"].float().contiguous()}
    video = out["videos"]
    video = (video[0] if isinstance(video, (list, tuple)) or video.ndim == 5 else video).float()  # [F, 3, H, W]
    assert video.shape == (base.FRAMES, 3, base.HEIGHT, base.WIDTH), video.shape
    g["decode.frames_mean"] = video.mean(dim=(2, 3)).contiguous()
    for f in (0, base.FRAMES - 1):
        g[f"decode.frame.{f}"] = video[f].contiguous()
    audio = out["audio"].float()[0]
    g["decode.audio_head"] = audio[:, :base.SLICE].contiguous()
    g["decode.audio_mean_per_latent"] = audio.reshape(2, -1, 800).mean(-1).contiguous()
    meta = {"prompt": PROMPT, "text_encoder_layer": str(LAYER), "seed": str(base.SEED),
            "diffusers_version": diffusers.__version__, "transformers_version": transformers.__version__,
            "torch_version": torch.__version__, "evaluations": str(len(forwards))}
    args.out.mkdir(parents=True, exist_ok=True)
    save_golden(args.out / "golden.safetensors", g, meta)
    print(f"{len(forwards)} forwards, L = {tags.numel()}, S = {forwards[0]['token_tags'].numel()}")
    print_sizes(args.out)


if __name__ == "__main__":
    main()
