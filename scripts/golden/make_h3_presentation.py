#!/usr/bin/env python3
"""Golden presentations of MiniMax-H3 fl2va and ref2va requests (src/pipeline/h3_presentation.*).

Runs diffusers' own text-encoder steps (`MiniMaxH3FL2VATextEncoderStep`, `MiniMaxH3Ref2VATextEncoderStep`) on small
requests, with the Qwen2 tokenizer of tests/data/tokenizer/qwen_bpe (trained like Qwen's, with Qwen's vision special
tokens, made by make_tokenizer_golden.py) and the Qwen3-VL image and video processors set as H3's processor/*.json
sets them (REF2VA.md §4.1). The conditioner call is replaced by one that records what the step hands it, so no model
is needed: the token ids, the DiT tags, Qwen's mm_token_type_ids and the vision grids are the pipeline's own.

  fl2va   2 keyframes (256x320 and 320x256 px), a prompt
  ref2va  image (256x256), video with a soundtrack (124 frames of 64x96 at 24 fps: 11 frames sampled at 2 fps,
          6 blocks, timestamps 0.2 ... 5.0), an audio clip, image (320x256), a prompt
  video_sampling  diffusers' `_sample_video_condition_frames` for several lengths and rates
  positions       transformers' `Qwen3VLModel.get_rope_index` on the fl2va and ref2va presentations

Run (from the repository root; the output is byte-identical from run to run):

    python scripts/golden/make_h3_presentation.py --out tests/data/h3_presentation
"""

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from PIL import Image

import diffusers
import transformers
from diffusers.modular_pipelines import PipelineState
from diffusers.modular_pipelines.minimax_h3 import encoders
from diffusers.modular_pipelines.minimax_h3.references import (
    MiniMaxH3AudioReference,
    MiniMaxH3ImageReference,
    MiniMaxH3VideoReference,
)
from transformers import Qwen2TokenizerFast, Qwen2VLImageProcessorFast, Qwen3VLModel, Qwen3VLProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

TOKENIZER = Path("tests/data/tokenizer/qwen_bpe/tokenizer.json")
# A prompt with an added token (<d>...</d>, H3's dialogue marks), CJK, an emoji and a digit run.
PROMPT = "A woman laughs in the kitchen; she says <d>我们走吧!</d> 🎬 at 12:30, camera slowly pans."


def processor(tokenizer):
    """Qwen3-VL's processors with H3's processor/*.json settings (REF2VA.md §4.1)."""
    common = dict(patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    image = Qwen2VLImageProcessorFast(size={"shortest_edge": 65536, "longest_edge": 16777216}, **common)
    video = Qwen3VLVideoProcessor(size={"shortest_edge": 4096, "longest_edge": 25165824}, **common)
    return Qwen3VLProcessor(image_processor=image, tokenizer=tokenizer, video_processor=video)


def run_step(step, components, values):
    """Runs a text-encoder step with the conditioner call replaced by a recorder of its inputs."""
    seen = {}

    def record(text_encoder, processor, token_ids, vision_inputs=None, **kwargs):
        seen["token_ids"] = list(token_ids)
        seen["mm_token_type_ids"] = processor.create_mm_token_type_ids([token_ids])[0]
        seen["vision"] = vision_inputs or {}
        return torch.zeros(1, len(token_ids), 4)

    state = PipelineState()
    for k, v in values.items():
        state.set(k, v)
    original = encoders.get_qwen3vl_prompt_embeds
    encoders.get_qwen3vl_prompt_embeds = record
    try:
        step(components, state)
    finally:
        encoders.get_qwen3vl_prompt_embeds = original
    tags = state.get("text_token_tags").tolist()
    assert len(tags) == len(seen["token_ids"])
    grids = {k: v.tolist() for k, v in seen["vision"].items() if k.endswith("grid_thw")}
    return seen["token_ids"], tags, list(seen["mm_token_type_ids"]), grids


def rope_positions(token_ids, mm_token_type_ids, grids):
    """transformers' Qwen3VLModel.get_rope_index on the presentation (it reads only the merge size from its model),
    as [L][3] (t, h, w)."""
    model = SimpleNamespace(config=SimpleNamespace(vision_config=SimpleNamespace(spatial_merge_size=2)))
    model.get_vision_position_ids = lambda *a, **k: Qwen3VLModel.get_vision_position_ids(model, *a, **k)
    ids = torch.tensor([token_ids])
    image = torch.tensor(grids["image_grid_thw"]) if "image_grid_thw" in grids else None
    video = torch.tensor(grids["video_grid_thw"]) if "video_grid_thw" in grids else None
    positions, _ = Qwen3VLModel.get_rope_index(model, ids, torch.tensor([mm_token_type_ids]), image, video,
                                               torch.ones_like(ids))
    return positions[:, 0, :].t().tolist()


def image(h, w, seed):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    tokenizer = Qwen2TokenizerFast(tokenizer_file=str(TOKENIZER))
    proc = processor(tokenizer)
    components = SimpleNamespace(tokenizer=tokenizer, processor=proc, text_tag=1, video_tag=0,
                                 text_encoder=SimpleNamespace(dtype=torch.float32), text_encoder_layer=50, _execution_device="cpu", fps=24)

    out = {"tokenizer": str(TOKENIZER), "prompt": PROMPT,
           "special_ids": {t: tokenizer.convert_tokens_to_ids(t) for t in
                           ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")}}

    keyframes = [image(256, 320, 1), image(320, 256, 2)]
    ids, tags, mm, grids = run_step(encoders.MiniMaxH3FL2VATextEncoderStep(), components,
                                    {"prompt": PROMPT, "keyframes": keyframes})
    out["fl2va"] = {"image_grids": grids["image_grid_thw"], "token_ids": ids, "dit_tags": tags,
                    "mm_token_type_ids": mm, "text": tokenizer.decode(ids),
                    "positions": rope_positions(ids, mm, grids)}

    rng = np.random.default_rng(3)
    frames = rng.integers(0, 256, (124, 64, 96, 3), dtype=np.uint8)
    audio = torch.zeros(2, 1000)
    references = [MiniMaxH3ImageReference(image=image(256, 256, 4)),
                  MiniMaxH3VideoReference(frames=frames, fps=24.0, audio=audio, sample_rate=48000),
                  MiniMaxH3AudioReference(audio=audio, sample_rate=48000),
                  MiniMaxH3ImageReference(image=image(320, 256, 5))]
    step = encoders.MiniMaxH3Ref2VATextEncoderStep()
    ids, tags, mm, grids = run_step(step, components, {"prompt": PROMPT, "normalized_references": references})
    _, timestamps = step._sample_video_condition_frames(frames, 24.0, step.video_sample_fps, 2)
    out["ref2va"] = {
        "references": [{"kind": r.kind, "has_audio": bool(r.has_audio)} for r in references],
        "image_grids": grids["image_grid_thw"], "video_grids": grids["video_grid_thw"],
        "video_block_timestamps": [timestamps],
        "token_ids": ids, "dit_tags": tags, "mm_token_type_ids": mm, "text": tokenizer.decode(ids),
        "positions": rope_positions(ids, mm, grids)}

    # The sampling rule alone: (num_frames, fps, sample_fps) -> indices, block timestamps.
    sampling = []
    for n, fps, sample_fps in [(124, 24.0, 2.0), (13, 24.0, 2.0), (25, 24.0, 2.0), (345, 24.0, 2.0),
                               (30, 24.0, 3.0), (100, 24.0, 5.0), (50, 24.0, 7.0), (20, 24.0, 16.0)]:
        # Frames that are their own index, so the sampled "frames" are the sampled indices.
        idx, ts = step._sample_video_condition_frames(np.arange(n), fps, sample_fps, 2)
        sampling.append({"num_frames": n, "fps": fps, "sample_fps": sample_fps,
                         "frame_indices": [int(i) for i in idx],
                         "block_timestamps": ts, "labels": [f"<{t:.1f} seconds>" for t in ts]})
    out["video_sampling"] = sampling

    # sanity: the labels and vision blocks are where the spec puts them
    assert out["ref2va"]["video_block_timestamps"][0] == [0.25, 1.25, 2.25, 3.25, 4.25, 5.0]
    assert "<Audio 1>: <Video 1>: <0.2 seconds><|vision_start|>" in out["ref2va"]["text"], out["ref2va"]["text"]
    assert "<Audio 2>: <Picture 2>: " in out["ref2va"]["text"]
    assert out["fl2va"]["image_grids"] == [[1, 16, 20], [1, 20, 16]]

    meta = {"diffusers_version": diffusers.__version__, "transformers_version": transformers.__version__}
    out = {"meta": meta, **out}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "golden.json"
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{path}: {path.stat().st_size} bytes; fl2va {len(out['fl2va']['token_ids'])} tokens, "
          f"ref2va {len(out['ref2va']['token_ids'])} tokens")


if __name__ == "__main__":
    main()
