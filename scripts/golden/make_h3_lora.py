#!/usr/bin/env python3
"""Golden generator for LoRAs on the tiny MiniMax-H3 transformer (fp32, CPU, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt; needs tests/data/h3_tiny):

    python scripts/golden/make_h3_lora.py --tiny tests/data/h3_tiny --out tests/data/h3_lora

A PEFT LoRA (diffusers' `add_adapter`, peft's LoraLayer) on every linear of the h3_tiny transformer: attention
q/k/v/out and MLP of the blocks and the text refiner, the blocks' AdaLN projections, the final layer's AdaLN, the
patch / text / timestep projections and both output heads; mixed ranks (1..8) and alphas != rank
(`rank_pattern` / `alpha_pattern`), q/k/v of a block sharing one A (as a fused qkv LoRA does). Its factors are
bf16-representable so that a bf16 file holds them exactly. diffusers' forward with the LoRA unmerged (PEFT
semantics: base output + scale * B(A x)) is the golden.

Writes into --out:
  lora_diffusers.safetensors  diffusers' `save_lora_weights`: `transformer.` prefix, PEFT lora_A/lora_B, the alphas
                              in the `lora_adapter_metadata` JSON (r, lora_alpha, rank_pattern, alpha_pattern)
  lora_original.safetensors   the original release / ComfyUI names under `diffusion_model.`: fused `qkv_proj` (B rows
                              [q_all; k_all; v_all]), `mlp.fc1` (B rows [gate; value]), `out_proj`, `fc2`,
                              `final_layer.*`, `video_patch_proj`, ...; one `.alpha` scalar per module
  lora_diffsynth.safetensors  DiffSynth-Studio: the original names without prefix, `lora_A.default` /
                              `lora_B.default`, the fused qkv B per-head interleaved [h: q, k, v]; no alphas (the
                              alpha / rank scale folded into A, in f32)
  lora_kohya.safetensors      musubi-tuner / kohya: `lora_unet_blocks_0_attn_qkv_proj.lora_down.weight` /
                              `lora_up.weight` / `.alpha`, qkv B in thirds, fc1 swapped, stored in bf16 (exact)
  lora_diff.safetensors       full-rank deltas in ComfyUI's convention for every parameter (weights, biases, norms):
                              original names under `diffusion_model.`, MODULE.diff / MODULE.diff_b, fused qkv in
                              thirds, fc1 as [gate; value], bf16 (exact); applied at strength STRENGTH_DIFF to the
                              diffusers weights through diffusers' own single-file converter (qkv_layout "stacked")
  lora_second.safetensors     a second LoRA (fewer targets, ranks 2/3) in the original format without `.alpha`
                              tensors, its network alpha in `__metadata__["alpha"]` (lightx2v's convention)
  golden.safetensors          the inputs (those of h3_tiny), out.base.* (no LoRA), out.video / out.audio (the first
                              LoRA at strength 1), out2.video / out2.audio (both LoRAs, `set_adapters` weights
                              STRENGTH_1 / STRENGTH_2), out3.video / out3.audio (the base model + STRENGTH_DIFF x
                              lora_diff's deltas: weight += strength * diff, bias += strength * diff_b)

Every file except DiffSynth's is read back through diffusers' own MiniMax-H3 loader (`lora_state_dict`, whose
converter handles the original, musubi and network-alpha conventions) into a fresh model, whose forward must equal
PEFT's; DiffSynth's converter assumes the released head_dim 128, so its file is checked by de-interleaving it here
against the original file's thirds. The model and loader come from diffusers / peft on PyPI, unmodified.
"""

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

import torch

import diffusers
import peft
from diffusers import MiniMaxH3Transformer3DModel
from diffusers.loaders.single_file_utils import convert_minimax_h3_transformer_checkpoint_to_diffusers
from diffusers.loaders.lora_pipeline import MiniMaxH3LoraLoaderMixin
from peft import LoraConfig
from peft.utils import get_peft_model_state_dict
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_io import canonicalize_header, print_sizes, save_golden  # noqa: E402
import make_h3_tiny  # noqa: E402  (the tiny config, its inputs and forward call)

SEED = 20261202
STRENGTH_1, STRENGTH_2 = 0.75, -0.5
STRENGTH_DIFF = 0.6

TARGETS = ["to_q", "to_k", "to_v", "to_out.0", "ff.net.0.proj", "ff.net.2", "adaln_proj.linear", "norm_out.linear",
           "proj_in", "audio_proj_in", "context_embedder", "time_embedder.linear_1", "time_embedder.linear_2",
           "proj_out", "audio_proj_out"]
FIRST = dict(
    r=4, lora_alpha=2.0, target_modules=TARGETS,
    rank_pattern={"ff.net.0.proj": 3, "ff.net.2": 6, "adaln_proj.linear": 2, "norm_out.linear": 5, "proj_in": 1,
                  "time_embedder.linear_1": 3, r"refiner_blocks\.1\.attn\.to_[qkv]": 8},
    alpha_pattern={"ff.net.0.proj": 6.0, "adaln_proj.linear": 3.0, "norm_out.linear": 5.0,
                   r"refiner_blocks\.1\.attn\.to_[qkv]": 4.0, "audio_proj_out": 0.5},
)
SECOND_ALPHA = 3.0  # the network alpha recorded in the file's __metadata__
SECOND = dict(r=2, lora_alpha=SECOND_ALPHA, rank_pattern={"adaln_proj.linear": 3},
              target_modules=["to_q", "to_k", "to_v", "ff.net.2", "adaln_proj.linear", "norm_out.linear"])

# diffusers module (inside a block) -> the original's, for the modules that are not fused or swapped.
BLOCK_RENAMES = {"attn.to_out.0": "attn.out_proj", "ff.net.2": "mlp.fc2", "adaln_proj.linear": "adaln_proj.linear"}
TOP_RENAMES = {"proj_in": "video_patch_proj", "audio_proj_in": "audio_patch_proj", "context_embedder": "condition_proj",
               "time_embedder.linear_1": "time_embedder.proj_in", "time_embedder.linear_2": "time_embedder.proj_out",
               "norm_out.linear": "final_layer.adaln_proj.linear", "proj_out": "final_layer.video_out",
               "audio_proj_out": "final_layer.audio_out"}


def base_model(tiny: Path) -> MiniMaxH3Transformer3DModel:
    state = {}
    for shard in sorted((tiny / "transformer").glob("diffusion_pytorch_model-*.safetensors")):
        state.update(load_file(shard))
    model = MiniMaxH3Transformer3DModel(**make_h3_tiny.CONFIG).eval()
    model.load_state_dict(state, strict=True)
    return model


def add_lora(model, name: str, kwargs: dict, gen: torch.Generator) -> None:
    """Adds a PEFT adapter and fills its factors with seeded bf16-representable values; q/k/v share A."""
    model.add_adapter(LoraConfig(**kwargs), adapter_name=name)
    with torch.no_grad():
        for pname, p in sorted(model.named_parameters()):
            if f".lora_A.{name}." in pname or f".lora_B.{name}." in pname:
                p.copy_((0.3 * torch.randn(p.shape, generator=gen)).to(torch.bfloat16).to(torch.float32))
        for mname, module in model.named_modules():
            if mname.endswith(".attn") and hasattr(module, "to_q") and hasattr(module.to_q, "lora_A") \
                    and name in module.to_q.lora_A:
                for other in (module.to_k, module.to_v):
                    other.lora_A[name].weight.copy_(module.to_q.lora_A[name].weight)


def forward(model, inp):
    with torch.no_grad():
        r = make_h3_tiny.run_forward(model, inp)
    return r.sample.detach().clone(), r.audio_sample.detach().clone()


def module_scales(model, name: str) -> dict:
    """module name -> (A, B, alpha, rank) of adapter `name`, read from the injected layers (PEFT's own values)."""
    out = {}
    for mname, module in model.named_modules():
        if hasattr(module, "lora_A") and name in module.lora_A:
            A = module.lora_A[name].weight.detach().clone()
            B = module.lora_B[name].weight.detach().clone()
            r = module.r[name]
            alpha = module.lora_alpha[name]
            assert A.shape[0] == r and abs(module.scaling[name] - alpha / r) < 1e-12, mname
            out[mname] = (A, B, float(alpha), r)
    return out


def original_modules(lora: dict, heads: int, head_dim: int, interleave: bool) -> dict:
    """diffusers module -> (A, B, alpha) pairs as the original names: q/k/v fused (B thirds or per-head interleaved,
    A shared), fc1 B halves swapped to [gate; value]."""
    out = {}
    for mname, (A, B, alpha, r) in lora.items():
        m = re.fullmatch(r"(transformer_blocks|token_refiner\.refiner_blocks)\.(\d+)\.(.+)", mname)
        if not m:
            out[TOP_RENAMES[mname]] = (A, B, alpha)
            continue
        base = ("blocks." if m.group(1) == "transformer_blocks" else "token_refiner.blocks.") + m.group(2) + "."
        rest = m.group(3)
        if rest in ("attn.to_k", "attn.to_v"):
            continue
        if rest == "attn.to_q":
            q, k, v = (lora[f"{m.group(1)}.{m.group(2)}.attn.to_{x}"] for x in "qkv")
            assert torch.equal(q[0], k[0]) and torch.equal(q[0], v[0]) and q[2] == k[2] == v[2], mname
            if interleave:
                parts = [t[1].view(heads, head_dim, -1) for t in (q, k, v)]
                fused = torch.stack(parts, dim=1).reshape(3 * heads * head_dim, -1)
            else:
                fused = torch.cat([q[1], k[1], v[1]], dim=0)
            out[base + "attn.qkv_proj"] = (A, fused, alpha)
        elif rest == "ff.net.0.proj":
            value, gate = B.chunk(2, dim=0)
            out[base + "mlp.fc1"] = (A, torch.cat([gate, value], dim=0), alpha)
        else:
            out[base + BLOCK_RENAMES[rest]] = (A, B, alpha)
    return out


def diff_golden(tiny: Path, cfg: dict, inp, out: Path, gen: torch.Generator):
    """A .diff / .diff_b delta for every parameter in the original names; the forward of the base weights plus
    STRENGTH_DIFF times the deltas, renamed and unfolded by diffusers' single-file converter."""
    base = {k: v.clone() for k, v in base_model(tiny).state_dict().items()}
    original = make_h3_tiny.diffusers_to_original(base, cfg)
    deltas = {k: (0.05 * torch.randn(v.shape, generator=gen)).to(torch.bfloat16).float()
              for k, v in sorted(original.items()) if k.endswith((".weight", ".bias"))}
    converted = convert_minimax_h3_transformer_checkpoint_to_diffusers(dict(deltas), config=cfg, qkv_layout="stacked")
    assert set(converted) == set(base), sorted(set(converted) ^ set(base))
    # "stacked": the [q_all; k_all; v_all] rows of ComfyUI's single files, the order our .diff reading takes.
    model = MiniMaxH3Transformer3DModel(**make_h3_tiny.CONFIG).eval()
    model.load_state_dict({k: base[k] + STRENGTH_DIFF * converted[k] for k in base}, strict=True)
    tensors = {}
    for k, v in deltas.items():
        module, leaf = k.rsplit(".", 1)
        tensors[f"diffusion_model.{module}." + ("diff" if leaf == "weight" else "diff_b")] = v.to(torch.bfloat16)
    write(out / "lora_diff.safetensors", tensors, {"format": "pt"})
    return forward(model, inp), len(deltas)


def write(path: Path, tensors: dict, metadata: dict) -> None:
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, metadata=metadata)
    canonicalize_header(path)


def load_through_diffusers(tiny: Path, folder: Path, file: str, inp):
    """diffusers' MiniMax-H3 LoRA loader on one file, into a fresh base model; its forward. A bf16 file is read as
    f32 (a dict) so that the loader's alpha fold does not round in bf16; a file's __metadata__ goes with the path."""
    raw = load_file(folder / file)
    if any(t.dtype == torch.bfloat16 for t in raw.values()):
        source = {k: v.float() for k, v in raw.items()}
        state, metadata = MiniMaxH3LoraLoaderMixin.lora_state_dict(source, return_lora_metadata=True)
    else:
        state, metadata = MiniMaxH3LoraLoaderMixin.lora_state_dict(str(folder), weight_name=file,
                                                                   return_lora_metadata=True)
    model = base_model(tiny)
    model.load_lora_adapter(state, prefix="transformer", adapter_name="x", metadata=metadata)
    return forward(model, inp)


def rel_l2(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", type=Path, required=True, help="tests/data/h3_tiny (make_h3_tiny.py's output)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    cfg = dict(make_h3_tiny.CONFIG)
    heads, head_dim = cfg["num_attention_heads"], cfg["attention_head_dim"]
    inp = make_h3_tiny.build_inputs(torch.Generator().manual_seed(make_h3_tiny.SEED + 1), cfg)
    tiny_golden = load_file(args.tiny / "golden.safetensors")
    for k, v in inp.items():
        assert torch.equal(v, tiny_golden[k]), f"{k} differs from h3_tiny's input"

    model = base_model(args.tiny)
    base_video, base_audio = forward(model, inp)
    assert torch.equal(base_video, tiny_golden["out.video"]) and torch.equal(base_audio, tiny_golden["out.audio"])

    gen = torch.Generator().manual_seed(SEED)
    add_lora(model, "first", FIRST, gen)
    add_lora(model, "second", SECOND, gen)
    first, second = module_scales(model, "first"), module_scales(model, "second")
    assert len(first) == 2 * 6 + 3 * 7 + 8, len(first)  # refiner 2 x 6, blocks 3 x 7, 8 outside the blocks
    assert len({r for *_, r in first.values()}) >= 5 and any(a != r for _, _, a, r in first.values())

    model.set_adapters(["first"], weights=[1.0])
    video, audio = forward(model, inp)
    model.set_adapters(["first", "second"], weights=[STRENGTH_1, STRENGTH_2])
    video2, audio2 = forward(model, inp)
    for what, a, b in (("first", video, base_video), ("both", video2, video)):
        assert rel_l2(a, b) > 0.05, f"{what}: the LoRA barely changes the output ({rel_l2(a, b)})"

    # -------- the four formats of the first LoRA, the second in the original format with a network alpha
    model.set_adapters(["first"])
    peft_state = get_peft_model_state_dict(model, adapter_name="first")
    config = model.peft_config["first"].to_dict()
    # Sets (target_modules) serialize in hash order: sorted, the file's bytes are the same on every run.
    config = {k: sorted(v) if isinstance(v, (set, frozenset)) else v for k, v in config.items()}
    MiniMaxH3LoraLoaderMixin.save_lora_weights(out, transformer_lora_layers=peft_state,
                                              weight_name="lora_diffusers.safetensors",
                                              transformer_lora_adapter_metadata=config)
    canonicalize_header(out / "lora_diffusers.safetensors")

    original = original_modules(first, heads, head_dim, interleave=False)
    tensors = {}
    for m, (A, B, alpha) in original.items():
        tensors.update({f"diffusion_model.{m}.lora_A.weight": A, f"diffusion_model.{m}.lora_B.weight": B,
                        f"diffusion_model.{m}.alpha": torch.tensor(alpha)})
    write(out / "lora_original.safetensors", tensors, {"format": "pt"})

    tensors = {}
    for m, (A, B, alpha) in original_modules(first, heads, head_dim, interleave=True).items():
        tensors.update({f"{m}.lora_A.default.weight": A * (alpha / A.shape[0]), f"{m}.lora_B.default.weight": B})
    write(out / "lora_diffsynth.safetensors", tensors, {"format": "pt"})

    tensors = {}
    for m, (A, B, alpha) in original.items():
        flat = "lora_unet_" + m.replace(".", "_")
        tensors.update({f"{flat}.lora_down.weight": A.to(torch.bfloat16), f"{flat}.lora_up.weight": B.to(torch.bfloat16),
                        f"{flat}.alpha": torch.tensor(alpha)})
        assert torch.equal(A.to(torch.bfloat16).float(), A) and torch.equal(B.to(torch.bfloat16).float(), B)
    write(out / "lora_kohya.safetensors", tensors, {"format": "pt"})

    tensors = {}
    for m, (A, B, alpha) in original_modules(second, heads, head_dim, interleave=False).items():
        assert alpha == SECOND_ALPHA
        tensors.update({f"diffusion_model.{m}.lora_A.weight": A, f"diffusion_model.{m}.lora_B.weight": B})
    write(out / "lora_second.safetensors", tensors, {"format": "pt", "alpha": str(SECOND_ALPHA)})

    # -------- every file through diffusers' own loader gives PEFT's output
    for file in ("lora_diffusers", "lora_original", "lora_kohya"):
        v, a = load_through_diffusers(args.tiny, out, file + ".safetensors", inp)
        print(f"{file}: diffusers' loader vs PEFT rel L2 video {rel_l2(v, video):.2e} audio {rel_l2(a, audio):.2e}")
        assert rel_l2(v, video) < 1e-6 and rel_l2(a, audio) < 1e-6, file
    v, a = load_through_diffusers(args.tiny, out, "lora_second.safetensors", inp)
    m2 = base_model(args.tiny)
    add_lora(m2, "second", SECOND, torch.Generator().manual_seed(SEED))  # a different draw: only its scales matter
    with torch.no_grad():
        for mname, module in model.named_modules():
            if hasattr(module, "lora_A") and "second" in module.lora_A:
                target = m2.get_submodule(mname)
                target.lora_A["second"].weight.copy_(module.lora_A["second"].weight)
                target.lora_B["second"].weight.copy_(module.lora_B["second"].weight)
    v2, a2 = forward(m2, inp)
    print(f"lora_second: diffusers' loader vs PEFT rel L2 video {rel_l2(v, v2):.2e}")
    assert rel_l2(v, v2) < 1e-6 and rel_l2(a, a2) < 1e-6
    # DiffSynth: its per-head interleave undone here (diffusers' converter assumes head_dim 128) equals the thirds.
    ds = load_file(out / "lora_diffsynth.safetensors")
    orig = load_file(out / "lora_original.safetensors")
    for key, B in ds.items():
        if key.endswith("attn.qkv_proj.lora_B.default.weight"):
            thirds = B.view(heads, 3, head_dim, -1).transpose(0, 1).reshape(B.shape)
            assert torch.equal(thirds, orig["diffusion_model." + key.replace(".default.", ".")]), key
    assert len(ds) == 2 * len(original)

    (video3, audio3), n_diffs = diff_golden(args.tiny, cfg, inp, out, torch.Generator().manual_seed(SEED + 2))
    assert rel_l2(video3, base_video) > 0.01, rel_l2(video3, base_video)

    golden = {**inp, "out3.video": video3, "out3.audio": audio3, "out.base.video": base_video, "out.base.audio": base_audio, "out.video": video, "out.audio": audio,
              "out2.video": video2, "out2.audio": audio2}
    meta = {
        "torch_version": torch.__version__, "diffusers_version": diffusers.__version__, "peft_version": peft.__version__,
        "seed": str(SEED), "strengths": json.dumps([STRENGTH_1, STRENGTH_2]), "strength_diff": str(STRENGTH_DIFF),
        "first": json.dumps({k: v for k, v in FIRST.items()}, sort_keys=True),
        "second": json.dumps({k: v for k, v in SECOND.items()}, sort_keys=True),
        "modules": json.dumps({m: [r, a] for m, (_, _, a, r) in sorted(first.items())}),
    }
    save_golden(out / "golden.safetensors", {k: v.contiguous() for k, v in golden.items()}, meta)
    print(f"first LoRA: {len(first)} modules, ranks {sorted({r for *_, r in first.values()})}; "
          f"second: {len(second)} modules")
    print(f"rel L2 to the base output: first {rel_l2(video, base_video):.3f}, both {rel_l2(video2, base_video):.3f}, "
          f"{n_diffs} full-rank deltas {rel_l2(video3, base_video):.3f}")
    print_sizes(out)


if __name__ == "__main__":
    main()
