#!/usr/bin/env python3
"""Golden text features of a MiniMax-H3 fl2va request on a tiny checkpoint (src/pipeline/fl2va_prompt.*), fp32, CPU.

Runs diffusers' own `MiniMaxH3FL2VATextEncoderStep` end to end, conditioner included: the keyframes through the
Qwen3-VL image processor, the presentation ("<Picture i>: " + a vision block per keyframe, then the prompt, each
segment tokenized on its own), then one `Qwen3VLModel` call with the pixel values, and `hidden_states[layer]`.
The tokenizer is tests/data/tokenizer/qwen_bpe (Qwen's vision special tokens at 3003..3006); the conditioner is a
fresh tiny `Qwen3VLForConditionalGeneration` with seeded random weights whose vocabulary is the tokenizer's and whose
vision tower has H3's patch 16 / temporal 2 / merge 2 (3 blocks, DeepStack after 0, 1, 2; text 3 layers of 8 (h3_tiny's text_dim), the
features read after layer 2).
The image processor is H3's with small pixel limits (4096 .. 16384) so the goldens stay
small; the keyframes are two 96x128 canvas images (each 6x8 patches, 12 vision tokens).

Writes into --out:
  text_encoder/                       `save_pretrained` of the tiny conditioner (the release's key names)
  processor/preprocessor_config.json  the image processor's settings
  golden.safetensors
    in.keyframe.{0,1}   u8 [96, 128, 3]   the canvas keyframes, in packed order
    image_grid_thw      i64 [2, 3]
    token_ids           i64 [L]           the presentation
    text_token_tags     i64 [L]           the step's per-row DiT tags (0 on the vision blocks, 1 elsewhere)
    prompt_embeds       f32 [L, 8]        hidden_states[2]
  metadata: prompt, text_encoder_layer, versions

Run (from the repository root; the output is byte-identical from run to run):

    python scripts/golden/make_h3_fl2va_prompt.py --out tests/data/h3_fl2va_prompt
"""

import argparse
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from PIL import Image

import diffusers
import transformers
from diffusers.modular_pipelines import PipelineState
from diffusers.modular_pipelines.minimax_h3 import encoders
from transformers import (Qwen2TokenizerFast, Qwen2VLImageProcessorFast, Qwen3VLConfig,
                          Qwen3VLForConditionalGeneration, Qwen3VLProcessor)
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

from golden_io import print_sizes, save_golden

SEED = 20261202
TOKENIZER = Path("tests/data/tokenizer/qwen_bpe/tokenizer.json")
PROMPT = "A red kite climbs over the dunes; a boy shouts <d>再高一点!</d> and the wind hums."
LAYER = 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.manual_seed(SEED)

    tokenizer = Qwen2TokenizerFast(tokenizer_file=str(TOKENIZER))
    ids = {t: tokenizer.convert_tokens_to_ids(t)
           for t in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")}
    common = dict(patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    image_processor = Qwen2VLImageProcessorFast(size={"shortest_edge": 4096, "longest_edge": 16384}, **common)
    video_processor = Qwen3VLVideoProcessor(size={"shortest_edge": 4096, "longest_edge": 25165824}, **common)
    processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor)

    text_config = dict(hidden_size=8, intermediate_size=32, num_hidden_layers=3, num_attention_heads=2,
                       num_key_value_heads=1, head_dim=16, vocab_size=len(tokenizer), max_position_embeddings=512,
                       rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                                            "mrope_section": [4, 2, 2], "mrope_interleaved": True})
    vision_config = dict(depth=3, hidden_size=16, intermediate_size=32, num_heads=2, patch_size=16,
                         temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=8, num_position_embeddings=36,
                         deepstack_visual_indexes=[0, 1, 2])
    config = Qwen3VLConfig(text_config=text_config, vision_config=vision_config, tie_word_embeddings=False,
                           image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    model = Qwen3VLForConditionalGeneration(config).eval()
    with torch.no_grad():  # std 0.02 leaves a tiny stack near the identity; wider weights make the check mean more
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 1.0 / p.shape[-1] ** 0.5 if "embed_tokens" not in name else 1.0)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.1)

    rng = np.random.default_rng(SEED)
    keyframes = [rng.integers(0, 256, (96, 128, 3), dtype=np.uint8) for _ in range(2)]
    components = SimpleNamespace(tokenizer=tokenizer, processor=processor, text_encoder=model, text_tag=1, video_tag=0,
                                 text_encoder_layer=LAYER, _execution_device=torch.device("cpu"))
    seen = {}
    original = encoders.get_qwen3vl_prompt_embeds

    def record(text_encoder, proc, token_ids, vision_inputs=None, **kwargs):
        seen["token_ids"], seen["vision"] = list(token_ids), vision_inputs
        return original(text_encoder, proc, token_ids, vision_inputs, **kwargs)

    state = PipelineState()
    state.set("prompt", PROMPT)
    state.set("keyframes", [Image.fromarray(k) for k in keyframes])
    encoders.get_qwen3vl_prompt_embeds = record
    try:
        encoders.MiniMaxH3FL2VATextEncoderStep()(components, state)
    finally:
        encoders.get_qwen3vl_prompt_embeds = original
    embeds = state.get("prompt_embeds")[0].contiguous()
    tags = state.get("text_token_tags").to(torch.int64)
    assert seen["vision"]["image_grid_thw"].tolist() == [[1, 6, 8], [1, 6, 8]]
    assert tags.numel() == embeds.shape[0] == len(seen["token_ids"])

    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out / "text_encoder")
    image_processor.save_pretrained(args.out / "processor")
    golden = {"in.keyframe.0": torch.from_numpy(keyframes[0]), "in.keyframe.1": torch.from_numpy(keyframes[1]),
              "image_grid_thw": seen["vision"]["image_grid_thw"].to(torch.int64),
              "token_ids": torch.tensor(seen["token_ids"], dtype=torch.int64), "text_token_tags": tags,
              "prompt_embeds": embeds}
    meta = {"prompt": PROMPT, "text_encoder_layer": str(LAYER), "diffusers_version": diffusers.__version__,
            "transformers_version": transformers.__version__, "torch_version": torch.__version__}
    save_golden(args.out / "golden.safetensors", golden, meta)
    print_sizes(args.out)


if __name__ == "__main__":
    main()
