#!/usr/bin/env python3
"""Golden text features of a MiniMax-H3 ref2va request on a tiny checkpoint (src/pipeline/ref2va_prompt.*), fp32, CPU.

Runs diffusers 0.42.1's own `MiniMaxH3Ref2VATextEncoderStep` end to end, conditioner included: the images through one
Qwen3-VL image-processor call, each reference video's 24 fps frames sampled at 2 fps (paired, the last repeated)
through one video-processor call, the presentation ("<Audio j>: ", "<Picture i>: " + a vision block, "<Video k>: " +
per block "<ts seconds>" + a vision block, then the prompt; each segment tokenized on its own), then one
`Qwen3VLModel` call with both modalities' pixel values, and `hidden_states[layer]`.

No new weights: the conditioner is tests/data/h3_fl2va_prompt/text_encoder (make_h3_fl2va_prompt.py's tiny
Qwen3VLForConditionalGeneration, text 8 wide = h3_tiny's text_dim, 3 layers, features after layer 2) with its
processor/ image settings (4096 .. 16384 pixels) and H3's video settings (4096 .. 25 165 824). The tokenizer is
tests/data/tokenizer/qwen_bpe.

The request's normalized references, in this order (pixels from `pattern`, which the C++ test computes the same way):
  0. image 96x64 (W x H)            -> 6 vision tokens
  1. video 26 frames 128x64 at 24 fps with a soundtrack -> frames 0, 12, 24 sampled, 2 blocks of 8 tokens,
     "<0.2 seconds>" and "<1.0 seconds>"; "<Audio 1>: " before "<Video 1>: "
  2. audio clip                     -> "<Audio 2>: " alone
  3. image 64x96                    -> 6 vision tokens

Writes --out/golden.safetensors:
  image_grid_thw  i64 [2, 3], video_grid_thw i64 [1, 3]
  token_ids       i64 [L]   the presentation
  text_token_tags i64 [L]   the step's per-row DiT tags (0 on the vision blocks, 1 elsewhere)
  prompt_embeds   f32 [L, 8]
  metadata: prompt, text_encoder_layer, the references, versions

Run (from the repository root; the output is byte-identical from run to run):

    python scripts/golden/make_h3_ref2va_prompt.py --out tests/data/h3_ref2va_prompt
"""

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

import diffusers
import transformers
from diffusers.modular_pipelines import PipelineState
from diffusers.modular_pipelines.minimax_h3 import encoders
from diffusers.modular_pipelines.minimax_h3.references import (
    MiniMaxH3AudioReference,
    MiniMaxH3ImageReference,
    MiniMaxH3VideoReference,
)
from transformers import (Qwen2TokenizerFast, Qwen2VLImageProcessorFast, Qwen3VLForConditionalGeneration,
                          Qwen3VLProcessor)
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

from golden_io import print_sizes, save_golden

TOKENIZER = Path("tests/data/tokenizer/qwen_bpe/tokenizer.json")
CONDITIONER = Path("tests/data/h3_fl2va_prompt")
PROMPT = "The girl from picture 1 dances as in video 1, to the song of audio 2; she sings <d>我们走吧!</d> twice."
LAYER = 2


def pattern(frames: int, height: int, width: int, salt: int) -> np.ndarray:
    """u8 [frames, height, width, 3]: integer arithmetic the C++ test repeats exactly."""
    f, y, x, c = np.meshgrid(np.arange(frames), np.arange(height), np.arange(width), np.arange(3), indexing="ij")
    return ((37 * f + 11 * y + 7 * x + 59 * c + (x * y) % 13 + 101 * salt) % 256).astype(np.uint8)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    tokenizer = Qwen2TokenizerFast(tokenizer_file=str(TOKENIZER))
    image_processor = Qwen2VLImageProcessorFast.from_pretrained(CONDITIONER / "processor")
    common = dict(patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    video_processor = Qwen3VLVideoProcessor(size={"shortest_edge": 4096, "longest_edge": 25165824}, **common)
    processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor)
    model = Qwen3VLForConditionalGeneration.from_pretrained(CONDITIONER / "text_encoder", dtype=torch.float32).eval()

    sound = torch.zeros(2, 1600)  # never reaches the conditioner: only its "<Audio j>: " label
    references = [MiniMaxH3ImageReference(image=pattern(1, 64, 96, 1)[0]),
                  MiniMaxH3VideoReference(frames=pattern(26, 64, 128, 2), fps=24.0, audio=sound, sample_rate=32000),
                  MiniMaxH3AudioReference(audio=sound, sample_rate=32000),
                  MiniMaxH3ImageReference(image=pattern(1, 96, 64, 3)[0])]
    components = SimpleNamespace(tokenizer=tokenizer, processor=processor, text_encoder=model, text_tag=1, video_tag=0,
                                 text_encoder_layer=LAYER, fps=24, _execution_device=torch.device("cpu"))
    seen = {}
    original = encoders.get_qwen3vl_prompt_embeds

    def record(text_encoder, proc, token_ids, vision_inputs=None, **kwargs):
        seen["token_ids"], seen["vision"] = list(token_ids), vision_inputs
        return original(text_encoder, proc, token_ids, vision_inputs, **kwargs)

    state = PipelineState()
    state.set("prompt", PROMPT)
    state.set("normalized_references", references)
    encoders.get_qwen3vl_prompt_embeds = record
    try:
        encoders.MiniMaxH3Ref2VATextEncoderStep()(components, state)
    finally:
        encoders.get_qwen3vl_prompt_embeds = original
    embeds = state.get("prompt_embeds")[0].contiguous()
    tags = state.get("text_token_tags").to(torch.int64)
    assert seen["vision"]["image_grid_thw"].tolist() == [[1, 4, 6], [1, 6, 4]]
    assert seen["vision"]["video_grid_thw"].tolist() == [[2, 4, 8]]
    assert tags.numel() == embeds.shape[0] == len(seen["token_ids"])
    text = tokenizer.decode(seen["token_ids"])
    assert "<0.2 seconds>" in text and "<1.0 seconds>" in text and text.index("<Audio 1>") < text.index("<Video 1>")

    args.out.mkdir(parents=True, exist_ok=True)
    golden = {"image_grid_thw": seen["vision"]["image_grid_thw"].to(torch.int64),
              "video_grid_thw": seen["vision"]["video_grid_thw"].to(torch.int64),
              "token_ids": torch.tensor(seen["token_ids"], dtype=torch.int64), "text_token_tags": tags,
              "prompt_embeds": embeds}
    meta = {"prompt": PROMPT, "text_encoder_layer": str(LAYER),
            "references": json.dumps(["image 96x64 salt 1", "video 26 frames 128x64 24 fps salt 2, with sound",
                                      "audio", "image 64x96 salt 3"]),
            "diffusers_version": diffusers.__version__, "transformers_version": transformers.__version__,
            "torch_version": torch.__version__}
    save_golden(args.out / "golden.safetensors", golden, meta)
    print_sizes(args.out)


if __name__ == "__main__":
    main()
