#!/usr/bin/env python3
"""Golden for a mixed text + 2 images + 1 video sequence through the Qwen3-VL text stack (fp32, CPU, deterministic).

The tiny language model is the one make_qwen3vl_text.py saved (tests/data/qwen3vl_text/text_encoder, read here, not
rewritten); the vision tower is a fresh tiny one (3 blocks, DeepStack after blocks 0, 1, 2, as the released tower
feeds 3 DeepStack features) with seeded random weights, and the vision pad / start / end tokens get ids inside the
tiny vocabulary. The sequence is laid out as H3 presents ref2va references (REF2VA.md §4.3): label text,
<vision_start> pads <vision_end> per image, and per video block a timestamp label and its own pad run.

`Qwen3VLModel.forward` is called as diffusers' get_qwen3vl_prompt_embeds calls it (all-ones mask, mm_token_type_ids,
pixel values and grids, use_cache=False, output_hidden_states=True). Saved, so the C++ test needs no vision tower:

  in.input_ids            i64 [L]
  in.mm_token_type_ids    i64 [L]     0 text, 1 image pad, 2 video pad
  in.image_grid_thw       i64 [2, 3]
  in.video_grid_thw       i64 [1, 3]
  positions               i64 [3, L]  Qwen3VLModel.get_rope_index
  image_features          f32 [NI, hidden]     the vision tower's merger output for the images, in order
  video_features          f32 [NV, hidden]
  image_deepstack.{k}     f32 [NI, hidden]     k = 0, 1, 2
  video_deepstack.{k}     f32 [NV, hidden]
  hidden_states.{i}       f32 [L, hidden]      i = 0..3: the embeddings with the features scattered in (0), and the
                                               output of decoder layer i-1 as transformers records it (before that
                                               layer's DeepStack add)
  layer_output.3          f32 [L, hidden]      the raw output of decoder layer 3, the last of 4 (hidden_states[4] is
                                               the normed one): every DeepStack add has reached it
  rope.cos / rope.sin     f32 [L, head_dim]    the rotary tables of those positions

Run (from the repository root, after make_qwen3vl_text.py):

    python scripts/golden/make_qwen3vl_mixed.py --out tests/data/qwen3vl_mixed
"""

import argparse
import json
from pathlib import Path

import torch

import safetensors
import transformers
from safetensors.torch import load_file

from golden_io import print_sizes, save_golden
from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

SEED = 20261201
TEXT_ENCODER = Path("tests/data/qwen3vl_text/text_encoder")
VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD = 495, 496, 497, 498

VISION_CONFIG = dict(
    depth=3,
    hidden_size=16,
    intermediate_size=32,
    num_heads=2,
    patch_size=4,
    temporal_patch_size=2,
    spatial_merge_size=2,
    out_hidden_size=64,
    num_position_embeddings=16,
    deepstack_visual_indexes=[0, 1, 2],
)
# Grids in patches: images of 16x24 and 24x32 px (6 and 12 tokens), a video of 4 frames at 16x16 px (2 blocks of 4).
IMAGE_GRIDS = [[1, 4, 6], [1, 6, 8]]
VIDEO_GRIDS = [[2, 4, 4]]


def text(gen, n):
    """n random text token ids below the vision ids."""
    return torch.randint(0, VISION_START, (n,), generator=gen).tolist()


def block(pad, n):
    return [VISION_START] + [pad] * n + [VISION_END]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)

    saved_config = json.loads((TEXT_ENCODER / "config.json").read_text())
    config = Qwen3VLConfig(text_config=saved_config["text_config"], vision_config=VISION_CONFIG,
                           tie_word_embeddings=False, image_token_id=IMAGE_PAD, video_token_id=VIDEO_PAD,
                           vision_start_token_id=VISION_START, vision_end_token_id=VISION_END)
    model = Qwen3VLForConditionalGeneration(config).eval().to(torch.float32)
    # The saved language model, and seeded random vision weights of a well-conditioned size.
    weights = {}
    for shard in sorted(TEXT_ENCODER.glob("model-*.safetensors")):
        weights.update(load_file(shard))
    text_weights = {k: v for k, v in weights.items() if k.startswith("model.language_model.")}
    missing, unexpected = model.load_state_dict(text_weights, strict=False)
    assert not unexpected, unexpected
    assert all(not k.startswith("model.language_model.") for k in missing), missing
    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.model.visual.named_parameters()):
            if name.endswith(".bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=gen))
            elif "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif p.ndim >= 2:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=gen))

    # The presentation: labels, 2 images, a video of 2 timestamped blocks, the prompt.
    n_image = [t * h * w // 4 for t, h, w in IMAGE_GRIDS]
    n_block = VIDEO_GRIDS[0][1] * VIDEO_GRIDS[0][2] // 4
    ids = (text(gen, 5) + block(IMAGE_PAD, n_image[0]) + text(gen, 5) + block(IMAGE_PAD, n_image[1]) +
           text(gen, 5) + text(gen, 4) + block(VIDEO_PAD, n_block) + text(gen, 4) + block(VIDEO_PAD, n_block) +
           text(gen, 9))
    input_ids = torch.tensor([ids])
    mm = torch.tensor([[1 if i == IMAGE_PAD else 2 if i == VIDEO_PAD else 0 for i in ids]])
    image_grid = torch.tensor(IMAGE_GRIDS)
    video_grid = torch.tensor(VIDEO_GRIDS)
    patch_dim = 3 * 2 * 4 * 4
    pixel_values = torch.randn(int(image_grid.prod(-1).sum()), patch_dim, generator=gen)
    pixel_values_videos = torch.randn(int(video_grid.prod(-1).sum()), patch_dim, generator=gen)

    inner = model.model
    with torch.no_grad():
        positions, _ = inner.get_rope_index(input_ids, mm, image_grid, video_grid, torch.ones_like(input_ids))
        images = inner.get_image_features(pixel_values, image_grid, return_dict=True)
        videos = inner.get_video_features(pixel_values_videos, video_grid, return_dict=True)

        lm = inner.language_model
        cap = {}
        hooks = [lm.layers[3].register_forward_hook(lambda m, a, o: cap.__setitem__("layer3", o.detach().clone())),
                 lm.rotary_emb.register_forward_hook(
                     lambda m, a, o: cap.__setitem__("rope", tuple(x[0].detach().clone() for x in o)))]
        out = inner(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), mm_token_type_ids=mm,
                    pixel_values=pixel_values, image_grid_thw=image_grid, pixel_values_videos=pixel_values_videos,
                    video_grid_thw=video_grid, use_cache=False, output_hidden_states=True)
        for h in hooks:
            h.remove()

    hs = out.hidden_states
    assert len(hs) == 5 and torch.equal(hs[4], out.last_hidden_state)
    golden = {
        "in.input_ids": input_ids[0], "in.mm_token_type_ids": mm[0],
        "in.image_grid_thw": image_grid, "in.video_grid_thw": video_grid,
        "positions": positions[:, 0, :],
        "image_features": torch.cat(images.pooler_output), "video_features": torch.cat(videos.pooler_output),
        "layer_output.3": cap["layer3"][0], "rope.cos": cap["rope"][0], "rope.sin": cap["rope"][1],
    }
    for k in range(3):
        golden[f"image_deepstack.{k}"] = torch.cat(images.deepstack_features[k])
        golden[f"video_deepstack.{k}"] = torch.cat(videos.deepstack_features[k])
    for i in range(4):
        golden[f"hidden_states.{i}"] = hs[i][0]

    # sanity: the features are in hidden_states[0] at the pad rows; DeepStack changes later layers
    rows = (mm[0] > 0).nonzero()[:, 0]
    joint = torch.zeros(len(rows), 64)
    is_image = mm[0][rows] == 1
    joint[is_image], joint[~is_image] = golden["image_features"], golden["video_features"]
    assert torch.equal(hs[0][0][rows], joint)
    assert len(images.deepstack_features) == 3
    print("L =", len(ids), " positions max", int(positions.max()), " vision rows", len(rows))
    print("positions t:", positions[0, 0].tolist())

    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {"torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "safetensors_version": safetensors.__version__, "seed": str(SEED), "text_encoder": str(TEXT_ENCODER)}
    args.out.mkdir(parents=True, exist_ok=True)
    save_golden(args.out / "golden.safetensors", golden, meta)
    print_sizes(args.out)


if __name__ == "__main__":
    main()
