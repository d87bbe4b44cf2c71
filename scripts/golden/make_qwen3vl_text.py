#!/usr/bin/env python3
"""Golden generator for the Qwen3-VL text decoder (MiniMax-H3's conditioner), fp32, CPU, deterministic.

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_qwen3vl_text.py --out tests/data/qwen3vl_text

Writes into --out:
  text_encoder/        `Qwen3VLForConditionalGeneration.save_pretrained` of a tiny random model (config.json,
                       sharded safetensors + model.safetensors.index.json): the checkpoint's own key names,
                       vision tower and LM head included (the C++ loader must ignore them)
  golden.safetensors   inputs and activations of `model.model(...)` called the way diffusers' MiniMax-H3
                       pipeline calls it (all-ones mask, output_hidden_states=True, use_cache=False):
    in.input_ids              i64 [L]
    in.position_ids_3d        i64 [3, L]    (t, h, w) rows of a vision-like layout, for the M-RoPE run
    rope.cos / rope.sin       [L, head_dim] rotary tables for text positions 0..L-1
    hidden_states.{i}         [L, hidden]   i = 0..STOP: hidden_states[i] is the embedding (i = 0) or the output of
                                            decoder layer i-1, before the final norm (only the last, index
                                            num_hidden_layers, is replaced by the normed output; STOP < that)
    mrope.cos / mrope.sin     [L, head_dim] rotary tables for in.position_ids_3d (interleaved sections)
    mrope.hidden_states.{i}   the language model run with in.position_ids_3d
    bf16.hidden_states.{i}    the same text run with every weight rounded to bfloat16 (compute stays fp32): what
                              a bf16 checkpoint loaded into fp32 must give

The model comes from transformers on PyPI, unmodified; nothing here copies its code.
"""

import argparse
import copy
import shutil
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import safetensors
import transformers
from safetensors.torch import load_file

from golden_io import canonicalize_header, print_sizes, save_golden
from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

SEED = 20260901
SEQ_LEN = 19
# H3 reads hidden_states[50] of 64 layers; the tiny model reads hidden_states[3] of 4, so layer index 3 (the 4th)
# exists in the checkpoint but must never be read.
STOP_AFTER_LAYERS = 3

TEXT_CONFIG = dict(
    vocab_size=500,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    hidden_act="silu",
    max_position_embeddings=256,
    rms_norm_eps=1e-6,
    attention_bias=False,
    # Legacy spelling, as the released Qwen3-VL config.json has it (transformers folds it into rope_parameters).
    # mrope_section is scaled from [24, 20, 20] on 64 frequency slots to [4, 2, 2] on 8: with the interleave
    # h takes slots 1, 4 and w takes 2, 5 (slice(offset, 3 * section, 3)); t keeps 0, 3, 6, 7. A section such as
    # [2, 3, 3] would not be honoured: slice(2, 9, 3) on 8 slots gives w only 2 slots.
    rope_scaling=dict(rope_type="default", mrope_section=[4, 2, 2], mrope_interleaved=True),
    rope_theta=5000000.0,
)

VISION_CONFIG = dict(
    depth=2,
    hidden_size=16,
    intermediate_size=32,
    num_heads=2,
    patch_size=4,
    temporal_patch_size=2,
    spatial_merge_size=2,
    out_hidden_size=64,
    num_position_embeddings=16,
    deepstack_visual_indexes=[0, 1],
)


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


def run_language_model(model, input_ids, position_ids=None) -> dict:
    """Calls `model.model` as diffusers' `get_qwen3vl_prompt_embeds` does; captures the rotary tables too."""
    lm = model.model.language_model
    cap = {}

    def rope_hook(_m, _a, output):
        cap["cos"], cap["sin"] = (o[0].detach().clone() for o in output)  # drop batch

    handle = lm.rotary_emb.register_forward_hook(rope_hook)
    kwargs = dict(input_ids=input_ids[None], attention_mask=torch.ones_like(input_ids[None]),
                  use_cache=False, output_hidden_states=True)
    with torch.no_grad():
        if position_ids is None:
            out = model.model(**kwargs)
        else:
            # Qwen3VLModel would compute 3-D positions from mm_token_type_ids; pass ours straight to the text model.
            out = lm(**kwargs, position_ids=position_ids[:, None, :])
    handle.remove()
    hs = out.hidden_states
    n = model.config.text_config.num_hidden_layers
    assert len(hs) == n + 1
    # hidden_states[n] is the normed last_hidden_state; every earlier one is a raw residual stream.
    assert torch.equal(hs[n], out.last_hidden_state)
    cap["hidden_states"] = [h[0].detach().clone() for h in hs]
    return cap


def check_hidden_state_semantics(model, input_ids, cap) -> None:
    """hidden_states[i] (i < n) is the input of layer i: check it by running the layers by hand."""
    lm = model.model.language_model
    with torch.no_grad():
        h = lm.embed_tokens(input_ids[None])
        pos = torch.arange(input_ids.numel())[None]
        pe = lm.rotary_emb(h, pos[None].expand(3, 1, -1))
        mask = torch.full((input_ids.numel(),) * 2, float("-inf")).triu(1)[None, None]
        for i, layer in enumerate(lm.layers):
            assert torch.allclose(h[0], cap["hidden_states"][i], rtol=0, atol=1e-5), i
            h = layer(h, position_embeddings=pe, attention_mask=mask)
        assert torch.allclose(lm.norm(h)[0], cap["hidden_states"][-1], rtol=0, atol=1e-5)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-shard-size", default="400KB", help="save_pretrained shard limit (2+ shards expected)")
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    tdir = out / "text_encoder"
    if tdir.exists():
        shutil.rmtree(tdir)

    config = Qwen3VLConfig(text_config=TEXT_CONFIG, vision_config=VISION_CONFIG, tie_word_embeddings=False)
    model = Qwen3VLForConditionalGeneration(config).eval().to(torch.float32)
    randomize_(model, torch.Generator().manual_seed(SEED))
    tc = model.config.text_config
    assert tc.rope_parameters["mrope_section"] == [4, 2, 2] and tc.rope_parameters["rope_theta"] == 5e6
    assert model.model.language_model.config._attn_implementation in ("sdpa", "eager")

    model.save_pretrained(tdir, safe_serialization=True, max_shard_size=args.max_shard_size)
    shards = sorted(tdir.glob("model-*.safetensors"))
    if len(shards) < 2 or not (tdir / "model.safetensors.index.json").exists():
        raise AssertionError(f"expected 2+ shards and an index, got {sorted(p.name for p in tdir.iterdir())}")
    for s in shards:
        canonicalize_header(s)
    (tdir / "generation_config.json").unlink(missing_ok=True)
    saved = {}
    for s in shards:
        saved.update(load_file(s))
    sd = model.state_dict()
    assert set(saved) == set(sd), sorted(set(saved) ^ set(sd))
    assert all(torch.equal(saved[k], sd[k]) for k in sd)
    for must in ("model.language_model.embed_tokens.weight", "model.language_model.layers.3.mlp.down_proj.weight",
                 "model.language_model.norm.weight", "lm_head.weight", "model.visual.patch_embed.proj.weight"):
        assert must in saved, must

    gen = torch.Generator().manual_seed(SEED + 1)
    input_ids = torch.randint(0, tc.vocab_size, (SEQ_LEN,), generator=gen, dtype=torch.int64)
    input_ids[0], input_ids[-1] = tc.vocab_size - 1, 0  # both ends of the vocabulary
    cap = run_language_model(model, input_ids)
    check_hidden_state_semantics(model, input_ids, cap)

    # A vision-like layout: 5 text tokens, a 1 x 2 x 4 merged image grid (t fixed, h and w vary), then text again
    # continuing from max + 1, as get_rope_index lays it out. Exercises each axis's interleaved slots.
    t = list(range(5)) + [5] * 8 + list(range(7, 13))
    h = list(range(5)) + [5] * 4 + [6] * 4 + list(range(7, 13))
    w = list(range(5)) + [5, 6, 7, 8] * 2 + list(range(7, 13))
    pos3 = torch.tensor([t, h, w], dtype=torch.int64)
    assert pos3.shape == (3, SEQ_LEN)
    mcap = run_language_model(model, input_ids, pos3)

    bmodel = copy.deepcopy(model)
    with torch.no_grad():
        for p in bmodel.parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
    bcap = run_language_model(bmodel, input_ids)

    golden = {"in.input_ids": input_ids, "in.position_ids_3d": pos3,
              "rope.cos": cap["cos"], "rope.sin": cap["sin"],
              "mrope.cos": mcap["cos"], "mrope.sin": mcap["sin"]}
    for i in range(STOP_AFTER_LAYERS + 1):
        golden[f"hidden_states.{i}"] = cap["hidden_states"][i]
        golden[f"mrope.hidden_states.{i}"] = mcap["hidden_states"][i]
        golden[f"bf16.hidden_states.{i}"] = bcap["hidden_states"][i]

    # sanity: every layer changes the stream, the 3-D positions change the result, bf16 rounding is visible
    for i in range(1, STOP_AFTER_LAYERS + 1):
        a, b = golden[f"hidden_states.{i - 1}"], golden[f"hidden_states.{i}"]
        rel = ((b - a).norm() / a.norm()).item()
        print(f"layer {i - 1}: rel change {rel:.3f}, |h| {b.norm():.2f}")
        assert rel > 0.05
    for pre in ("mrope.", "bf16."):
        d = golden[f"{pre}hidden_states.{STOP_AFTER_LAYERS}"] - golden[f"hidden_states.{STOP_AFTER_LAYERS}"]
        rel = (d.norm() / golden[f"hidden_states.{STOP_AFTER_LAYERS}"].norm()).item()
        print(f"{pre} vs 1-D fp32: rel L2 {rel:.2e}")
        assert rel > 1e-3
    assert torch.equal(golden["mrope.cos"][:5], golden["rope.cos"][:5])
    assert not torch.equal(golden["mrope.cos"][5:13], golden["rope.cos"][5:13])

    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "safetensors_version": safetensors.__version__,
        "seed": str(SEED),
        "stop_after_layers": str(STOP_AFTER_LAYERS),
        "call": "model.model(input_ids, attention_mask=ones, use_cache=False, output_hidden_states=True)",
    }
    save_golden(out / "golden.safetensors", golden, meta)

    print("input_ids:", input_ids.tolist())
    print_sizes(out)


if __name__ == "__main__":
    main()
