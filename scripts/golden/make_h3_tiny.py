#!/usr/bin/env python3
"""Golden generator for the tiny MiniMax-H3 denoiser (fp32, CPU, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_tiny.py --out tests/data/h3_tiny

Writes into --out:
  transformer/                 diffusers `save_pretrained` output: config.json, 3+ safetensors shards and
                               diffusion_pytorch_model.safetensors.index.json
  transformer_original/        the same weights under the original release key names (fused per-head
                               interleaved qkv_proj, mlp.fc1 as [gate; value], rope.inv_freq, ...), prefixed
                               `model.diffusion_model.`, in one model.safetensors, plus the same config.json
  golden.safetensors           one packed t2va-like input and the intermediate/final activations of
                               `diffusers.MiniMaxH3Transformer3DModel`, captured with forward hooks

The model comes from diffusers on PyPI, unmodified; nothing here copies its code.
"""

import argparse
import json
import math
import shutil
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import diffusers
import safetensors
from diffusers import MiniMaxH3Transformer3DModel
from diffusers.loaders.single_file_utils import convert_minimax_h3_transformer_checkpoint_to_diffusers
from diffusers.modular_pipelines.minimax_h3.before_denoise import (
    MiniMaxH3PrepareLayoutStep,
    MiniMaxH3SetTimestepsStep,
)
from safetensors.torch import load_file, save_file

from golden_io import canonicalize_header, print_sizes, save_golden


SEED = 20260823

CONFIG = dict(
    num_attention_heads=2,
    attention_head_dim=16,
    hidden_size=24,
    num_layers=3,
    num_refiner_layers=2,
    ffn_dim=32,
    in_channels=4,
    audio_in_channels=6,
    patch_size=(1, 2, 2),
    text_dim=8,
    freq_dim=8,
    time_embed_hidden_dim=24,
    time_embed_dim=16,
    rope_freq_dim=2,
)

# Packed layout: [text L | keyframe conditioning: 1 latent frame | target audio 2 x A | target video T frames].
NUM_TEXT = 5
LATENT_H, LATENT_W = 4, 6
NUM_TARGET_FRAMES = 2
NUM_AUDIO_LATENTS = 4  # per channel
AUDIO_CHANNELS = 2
TAG_VIDEO, TAG_TEXT, TAG_AUDIO = 0, 1, 2
T_VIDEO, T_AUDIO, T_COND = 0.35, 0.6, 0.999

ORIG_PREFIX = "model.diffusion_model."


# ----------------------------------------------------------------------------------------------------------------
# weights
# ----------------------------------------------------------------------------------------------------------------
def randomize_(model: nn.Module, gen: torch.Generator) -> None:
    """Every parameter gets a non-trivial random value (the default init zeroes some of them)."""
    norm_params = set()
    for mname, module in model.named_modules():
        if isinstance(module, nn.RMSNorm):
            for pname, _ in module.named_parameters(recurse=False):
                norm_params.add(f"{mname}.{pname}")
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name in norm_params:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))


def _rename_common(rest: str) -> str:
    """Names inside a transformer block or a refiner block (excluding qkv / fc1, handled separately)."""
    for d, o in (
        ("attn.norm_q.", "attn.q_norm."),
        ("attn.norm_k.", "attn.k_norm."),
        ("attn.to_out.0.", "attn.out_proj."),
        ("ff.net.2.", "mlp.fc2."),
    ):
        if rest.startswith(d):
            return o + rest[len(d):]
    return rest  # norm1., norm2., adaln_proj.linear.


def diffusers_to_original(sd: dict, cfg: dict) -> dict:
    """diffusers state dict -> original release names (MODELS_H3.md section 7), without the Comfy prefix."""
    heads, head_dim = cfg["num_attention_heads"], cfg["attention_head_dim"]
    top = {
        "proj_in.": "video_patch_proj.",
        "audio_proj_in.": "audio_patch_proj.",
        "context_embedder.": "condition_proj.",
        "time_embedder.linear_1.": "time_embedder.proj_in.",
        "time_embedder.linear_2.": "time_embedder.proj_out.",
        "token_refiner.final_norm.": "token_refiner.final_norm.",
        "norm_out.norm.": "final_layer.norm.",
        "norm_out.linear.": "final_layer.adaln_proj.linear.",
        "proj_out.": "final_layer.video_out.",
        "audio_proj_out.": "final_layer.audio_out.",
    }
    out = {}
    blocks = {}  # original block prefix -> {diffusers suffix: tensor}
    for key, t in sd.items():
        done = False
        for d, o in top.items():
            if key.startswith(d):
                out[o + key[len(d):]] = t.clone()
                done = True
                break
        if done:
            continue
        for d, o in (("token_refiner.refiner_blocks.", "token_refiner.blocks."), ("transformer_blocks.", "blocks.")):
            if key.startswith(d):
                idx, rest = key[len(d):].split(".", 1)
                blocks.setdefault(f"{o}{idx}.", {})[rest] = t
                done = True
                break
        if not done:
            raise KeyError(f"unmapped diffusers key {key}")

    for prefix, b in blocks.items():
        # fused qkv: rows [head h: q(head_dim), k(head_dim), v(head_dim)] for h in heads
        q, k, v = (b.pop(f"attn.to_{n}.weight") for n in "qkv")
        qkv = torch.stack([w.unflatten(0, (heads, head_dim)) for w in (q, k, v)], dim=1)  # [heads, 3, hd, in]
        out[prefix + "attn.qkv_proj.weight"] = qkv.flatten(0, 2).clone()
        # SwiGLU: diffusers [value; gate] -> original [gate; value]
        value, gate = b.pop("ff.net.0.proj.weight").chunk(2, dim=0)
        out[prefix + "mlp.fc1.weight"] = torch.cat([gate, value], dim=0).clone()
        for rest, t in b.items():
            out[prefix + _rename_common(rest)] = t.clone()

    F = cfg["rope_freq_dim"]
    theta = cfg.get("rope_theta", 10000.0)
    out["rope.inv_freq"] = 1.0 / (theta ** (torch.arange(0, 2 * F, 2, dtype=torch.float32) / (2 * F)))
    return out


def original_to_diffusers(orig: dict, cfg: dict) -> dict:
    """Independent inverse of `diffusers_to_original` (used to verify it)."""
    heads, head_dim = cfg["num_attention_heads"], cfg["attention_head_dim"]
    top = {
        "video_patch_proj.": "proj_in.",
        "audio_patch_proj.": "audio_proj_in.",
        "condition_proj.": "context_embedder.",
        "time_embedder.proj_in.": "time_embedder.linear_1.",
        "time_embedder.proj_out.": "time_embedder.linear_2.",
        "token_refiner.final_norm.": "token_refiner.final_norm.",
        "final_layer.norm.": "norm_out.norm.",
        "final_layer.adaln_proj.linear.": "norm_out.linear.",
        "final_layer.video_out.": "proj_out.",
        "final_layer.audio_out.": "audio_proj_out.",
    }
    inner = {
        "attn.q_norm.": "attn.norm_q.",
        "attn.k_norm.": "attn.norm_k.",
        "attn.out_proj.": "attn.to_out.0.",
        "mlp.fc2.": "ff.net.2.",
    }
    sd = {}
    for key, t in orig.items():
        if key == "rope.inv_freq":
            continue
        if any(key.startswith(o) for o in top):
            o = next(o for o in top if key.startswith(o))
            sd[top[o] + key[len(o):]] = t
            continue
        if key.startswith("token_refiner.blocks."):
            base, rest0 = "token_refiner.refiner_blocks.", key[len("token_refiner.blocks."):]
        elif key.startswith("blocks."):
            base, rest0 = "transformer_blocks.", key[len("blocks."):]
        else:
            raise KeyError(key)
        idx, rest = rest0.split(".", 1)
        pre = f"{base}{idx}."
        if rest == "attn.qkv_proj.weight":
            w = t.view(heads, 3, head_dim, -1)
            for j, n in enumerate("qkv"):
                sd[pre + f"attn.to_{n}.weight"] = w[:, j].reshape(heads * head_dim, -1)
        elif rest == "mlp.fc1.weight":
            g, v = t.chunk(2, dim=0)
            sd[pre + "ff.net.0.proj.weight"] = torch.cat([v, g], dim=0)
        else:
            for o, d in inner.items():
                if rest.startswith(o):
                    rest = d + rest[len(o):]
                    break
            sd[pre + rest] = t
    return sd


def assert_same_state(a: dict, b: dict, what: str) -> None:
    if set(a) != set(b):
        raise AssertionError(f"{what}: key sets differ: {sorted(set(a) ^ set(b))}")
    for k in a:
        if a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or not torch.equal(a[k], b[k]):
            raise AssertionError(f"{what}: tensor {k} differs")


# ----------------------------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------------------------
def spec_positions() -> torch.Tensor:
    """Positions computed straight from MODELS_H3.md section 1.5 (cross-check of the diffusers pipeline helper)."""
    L = NUM_TEXT
    a = math.sqrt(LATENT_H * LATENT_W)

    def axis(dim):
        r = dim / a
        start = (1.0 - r) / 2.0
        return 32.0 * np.linspace(start, start + r, dim // 2, endpoint=False)

    hs, ws = axis(LATENT_H), axis(LATENT_W)
    frame = [(h, w) for h in hs for w in ws]
    spans = [(5.0 / 3.0) * (1, 4, 4, 4, 4)[j % 5] for j in range(NUM_TARGET_FRAMES)]
    times, acc = [], float(L)
    for j in range(NUM_TARGET_FRAMES):
        times.append(acc)
        acc += spans[j]
    rows = [(float(j), 0.0, 0.0) for j in range(L)]
    rows += [(float(L), h, w) for h, w in frame]  # keyframe "first": target frame 0 time and grid
    for c in range(AUDIO_CHANNELS):
        wc = ws[0] if c == 0 else ws[-1]
        rows += [(float(L + j), 0.0, wc) for j in range(NUM_AUDIO_LATENTS)]
    for t in times:
        rows += [(t, h, w) for h, w in frame]
    return torch.tensor(rows, dtype=torch.float64)


def build_inputs(gen: torch.Generator, cfg: dict) -> dict:
    (position_ids, token_tags, video_indices, audio_indices, text_indices, n_cond_v, n_cond_a) = (
        MiniMaxH3PrepareLayoutStep.build_packed_sequence(
            text_token_tags=torch.full((NUM_TEXT,), TAG_TEXT, dtype=torch.long),
            num_latent_frames=NUM_TARGET_FRAMES,
            latent_height=LATENT_H,
            latent_width=LATENT_W,
            num_audio_latents=NUM_AUDIO_LATENTS,
            patch_size=tuple(cfg["patch_size"]),
            audio_channels=AUDIO_CHANNELS,
            audio_tag=TAG_AUDIO,
            video_tag=TAG_VIDEO,
            keyframe_anchors=("first",),
        )
    )
    timestep, timestep_indices = MiniMaxH3SetTimestepsStep.build_row_timesteps(
        video_indices,
        audio_indices,
        n_cond_v,
        n_cond_a,
        text_indices.numel(),
        video_timestep=T_VIDEO,
        audio_timestep=T_AUDIO,
        condition_video_timestep=max(T_VIDEO, T_COND),
        condition_audio_timestep=1.0,
    )
    # cross-check the pipeline helper against the spec (MODELS_H3.md sections 1.5 / 1.6)
    ref = spec_positions()
    if not torch.allclose(position_ids, ref, rtol=0, atol=1e-12):
        raise AssertionError(f"position grid differs from spec:\n{position_ids}\n{ref}")

    patch_dim = cfg["in_channels"] * int(np.prod(cfg["patch_size"]))
    rows_per_frame = (LATENT_H // 2) * (LATENT_W // 2)
    nv = rows_per_frame * (1 + NUM_TARGET_FRAMES)
    na = NUM_AUDIO_LATENTS * AUDIO_CHANNELS
    S = NUM_TEXT + nv + na
    assert position_ids.shape == (S, 3) and video_indices.numel() == nv and audio_indices.numel() == na
    assert n_cond_v == rows_per_frame and n_cond_a == 0

    return {
        "in.video": torch.randn((1, nv, patch_dim), generator=gen, dtype=torch.float32),
        "in.audio": torch.randn((1, na, cfg["audio_in_channels"]), generator=gen, dtype=torch.float32),
        "in.text": torch.randn((1, NUM_TEXT, cfg["text_dim"]), generator=gen, dtype=torch.float32),
        "in.timestep": timestep.to(torch.float32),
        "in.timestep_indices": timestep_indices.to(torch.int64),
        "in.token_tags": token_tags.to(torch.int64),
        "in.position_ids": position_ids.to(torch.float32),
        "in.video_indices": video_indices.to(torch.int64),
        "in.audio_indices": audio_indices.to(torch.int64),
        "in.text_indices": text_indices.to(torch.int64),
    }


def run_forward(model, inp):
    return model(
        hidden_states=inp["in.video"],
        audio_hidden_states=inp["in.audio"],
        encoder_hidden_states=inp["in.text"],
        timestep=inp["in.timestep"],
        timestep_indices=inp["in.timestep_indices"],
        token_tags=inp["in.token_tags"],
        position_ids=inp["in.position_ids"],
        video_indices=inp["in.video_indices"],
        audio_indices=inp["in.audio_indices"],
        text_indices=inp["in.text_indices"],
        return_dict=True,
    )


def capture(model, inp) -> dict:
    cap = {}
    handles = []

    def out_hook(name, fn=lambda o: o):
        def hook(_module, _args, output):
            cap[name] = fn(output).detach().clone()
        return hook

    handles.append(model.time_embedder.register_forward_hook(out_hook("temb")))

    def rope_hook(_m, _a, output):
        cap["rope.cos"], cap["rope.sin"] = (o.detach().clone() for o in output)

    handles.append(model.rope.register_forward_hook(rope_hook))
    for i, blk in enumerate(model.token_refiner.refiner_blocks):
        handles.append(blk.register_forward_hook(out_hook(f"refiner.{i}")))
    handles.append(model.token_refiner.register_forward_hook(out_hook("text_embeds")))

    def packed_hook(_m, args, kwargs):
        hs = args[0] if args else kwargs["hidden_states"]
        cap["packed"] = hs.detach().clone()

    handles.append(model.transformer_blocks[0].register_forward_pre_hook(packed_hook, with_kwargs=True))
    for i, blk in enumerate(model.transformer_blocks):
        handles.append(blk.adaln_proj.register_forward_hook(out_hook(f"block.{i}.modulation", lambda o: torch.cat(o, -1))))
        handles.append(blk.register_forward_hook(out_hook(f"block.{i}")))
    handles.append(model.norm_out.register_forward_hook(out_hook("norm_out")))

    with torch.no_grad():
        res = run_forward(model, inp)
    for h in handles:
        h.remove()
    cap["out.video"] = res.sample.detach().clone()
    cap["out.audio"] = res.audio_sample.detach().clone()
    return cap


# ----------------------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-shard-size", default="64KB", help="save_pretrained shard limit (3+ shards expected)")
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # CPU GEMM/reduction order independent of the host's core count
    torch.manual_seed(SEED)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("transformer", "transformer_original"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)

    # Constructed in fp32 already; `.to(torch.float32)` would only trigger diffusers' `_keep_in_fp32_modules` warning.
    model = MiniMaxH3Transformer3DModel(**CONFIG).eval()
    randomize_(model, torch.Generator().manual_seed(SEED))
    cfg = dict(model.config)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    assert all(v.dtype == torch.float32 for v in sd.values())
    n_params = sum(v.numel() for v in sd.values())

    # -------- diffusers layout, sharded
    tdir = out / "transformer"
    model.save_pretrained(tdir, safe_serialization=True, max_shard_size=args.max_shard_size)
    shards = sorted(tdir.glob("diffusion_pytorch_model-*.safetensors"))
    if len(shards) < 3 or not (tdir / "diffusion_pytorch_model.safetensors.index.json").exists():
        raise AssertionError(f"expected 3+ shards and an index, got {[s.name for s in shards]}")
    reloaded = {}
    for s in shards:
        reloaded.update(load_file(s))
    assert_same_state(sd, reloaded, "diffusers shards")

    # -------- original layout
    orig = diffusers_to_original(sd, cfg)
    assert_same_state(sd, original_to_diffusers(orig, cfg), "own inverse of original mapping")
    # diffusers' own single-file converter, interleaved qkv (it wants the prefix stripped, and drops rope.inv_freq)
    conv = convert_minimax_h3_transformer_checkpoint_to_diffusers(
        {k: v.clone() for k, v in orig.items()}, config=cfg, qkv_layout="interleaved"
    )
    assert_same_state(sd, conv, "diffusers convert_minimax_h3_transformer_checkpoint_to_diffusers")
    odir = out / "transformer_original"
    odir.mkdir(parents=True)
    save_file({ORIG_PREFIX + k: v.contiguous() for k, v in orig.items()}, odir / "model.safetensors",
              metadata={"format": "pt"})
    canonicalize_header(odir / "model.safetensors")
    shutil.copyfile(tdir / "config.json", odir / "config.json")
    back = {k[len(ORIG_PREFIX):]: v for k, v in load_file(odir / "model.safetensors").items()}
    assert_same_state(orig, back, "original file round trip")

    # -------- inputs and forward
    inp = build_inputs(torch.Generator().manual_seed(SEED + 1), cfg)
    cap = capture(model, inp)

    # Both files must reproduce the run bit for bit when loaded into a fresh model. (`from_pretrained` is not used:
    # with `_keep_in_fp32_modules` set it refuses `low_cpu_mem_usage=False`, i.e. it needs `accelerate`.)
    index = json.loads((tdir / "diffusion_pytorch_model.safetensors.index.json").read_text())
    from_index = {}
    for shard in sorted(set(index["weight_map"].values())):
        from_index.update(load_file(tdir / shard))
    assert set(from_index) == set(index["weight_map"])
    from_orig = convert_minimax_h3_transformer_checkpoint_to_diffusers(
        {k[len(ORIG_PREFIX):]: v for k, v in load_file(odir / "model.safetensors").items()},
        config=cfg, qkv_layout="interleaved",
    )
    for what, state in (("sharded diffusers", from_index), ("original", from_orig)):
        m2 = MiniMaxH3Transformer3DModel(**CONFIG).eval()
        m2.load_state_dict(state, strict=True)
        with torch.no_grad():
            r2 = run_forward(m2, inp)
        assert torch.equal(r2.sample, cap["out.video"]), what
        assert torch.equal(r2.audio_sample, cap["out.audio"]), what

    S = inp["in.position_ids"].shape[0]
    nv, na, L = inp["in.video"].shape[1], inp["in.audio"].shape[1], NUM_TEXT
    H, n_t = cfg["hidden_size"], inp["in.timestep"].numel()
    rot = 2 * 3 * cfg["rope_freq_dim"]
    expected = {
        "temb": (n_t, cfg["time_embed_dim"]),
        "rope.cos": (S, rot), "rope.sin": (S, rot),
        "text_embeds": (1, L, H), "packed": (1, S, H), "norm_out": (1, S, H),
        "out.video": (1, nv, inp["in.video"].shape[2]), "out.audio": (1, na, cfg["audio_in_channels"]),
    }
    for i in range(cfg["num_refiner_layers"]):
        expected[f"refiner.{i}"] = (1, L, H)
    for i in range(cfg["num_layers"]):
        expected[f"block.{i}.modulation"] = (n_t * 3, 6 * H)
        expected[f"block.{i}"] = (1, S, H)
    assert set(cap) == set(expected), sorted(set(cap) ^ set(expected))
    for k, shp in expected.items():
        assert tuple(cap[k].shape) == shp, (k, cap[k].shape, shp)
        assert cap[k].dtype == torch.float32, (k, cap[k].dtype)
        assert torch.isfinite(cap[k]).all(), k

    # -------- sanity
    prev = cap["packed"]
    for i in range(cfg["num_layers"]):
        cur = cap[f"block.{i}"]
        rel = ((cur - prev).abs().max() / prev.abs().max()).item()
        print(f"block.{i}: max|x|={cur.abs().max().item():.4f} rel change={rel:.4f}")
        assert rel > 1e-2, f"block {i} barely changes the state"
        prev = cur
    assert cap["out.video"].abs().mean().item() > 0.1, "out.video is trivially small"
    assert cap["out.audio"].abs().mean().item() > 0.1, "out.audio is trivially small"
    # rope table check against the closed form
    F = cfg["rope_freq_dim"]
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, 2 * F, 2, dtype=torch.float32) / (2 * F)))
    ang = (inp["in.position_ids"][:, :, None] * inv).reshape(S, 3 * F)
    assert torch.equal(cap["rope.cos"], torch.cat([ang, ang], -1).cos())

    golden = {**inp, **cap}
    golden = {k: v.contiguous() for k, v in golden.items()}
    meta = {
        "config": json.dumps({k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()
                              if not k.startswith("_")}, sort_keys=True),
        "torch_version": torch.__version__,
        "diffusers_version": diffusers.__version__,
        "safetensors_version": safetensors.__version__,
        "numpy_version": np.__version__,
        "seed": str(SEED),
        "dtype": "float32",
        "layout": json.dumps({
            "order": "text | keyframe conditioning video (1 latent frame) | target audio (channel-major) | target video",
            "L": L, "Nv": nv, "Na": na, "S": S, "latent_hw": [LATENT_H, LATENT_W],
            "target_latent_frames": NUM_TARGET_FRAMES, "audio_latents_per_channel": NUM_AUDIO_LATENTS,
            "t_video": T_VIDEO, "t_audio": T_AUDIO, "t_condition_video": T_COND,
            "tags": {"video": TAG_VIDEO, "text": TAG_TEXT, "audio": TAG_AUDIO},
        }),
        "modulation_layout": "rows t_idx*3+modality; cols [shift_msa|scale_msa|gate_msa|shift_mlp|scale_mlp|gate_mlp]",
    }
    save_golden(out / "golden.safetensors", golden, meta)

    print(f"params: {n_params}  S={S} Nv={nv} Na={na} L={L}")
    print("timestep:", inp["in.timestep"].tolist())
    print("timestep_indices:", inp["in.timestep_indices"].tolist())
    print("token_tags:", inp["in.token_tags"].tolist())
    print("video_indices:", inp["in.video_indices"].tolist())
    print("audio_indices:", inp["in.audio_indices"].tolist())
    print("text_indices:", inp["in.text_indices"].tolist())
    print("position_ids:\n", inp["in.position_ids"])
    print("out.video mean|x| %.4f  out.audio mean|x| %.4f" % (cap["out.video"].abs().mean(), cap["out.audio"].abs().mean()))
    print_sizes(out)


if __name__ == "__main__":
    main()
