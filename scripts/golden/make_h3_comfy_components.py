#!/usr/bin/env python3
"""Tiny MiniMax-H3 component files as ComfyUI keeps them in models/vae and models/text_encoders
(diffusers 0.42.1, transformers 5.24.0, CPU, fp32, deterministic).

Run (from the repository root, in a venv made from scripts/golden/requirements.txt):

    python scripts/golden/make_h3_comfy_components.py --out tests/data/h3_comfy_components

Each file holds the weights of a tiny diffusers folder already in tests/data, in ComfyUI's naming:
  vae.safetensors           from h3_video_vae_encoder/vae: the original release's names (what ComfyUI's
                            comfy/ldm/minimax/vae.py loads): decoder.x_embedder, one fused attn.to_qkv per block,
                            per-head interleaved [h: q, k, v] with its bias, attn.to_out, ff.w1 rows [gate; up], ff.w2,
                            encoder.down.i.block.j (nin_shortcut), encoder.down.i.downsample, decoder.mask_token, and
                            the config's latents_mean / latents_std as tensors
  audio_vae.safetensors     from h3_audio_vae_encoder/audio_vae: the same module names with every weight norm folded
                            into a plain `weight` (torch's own _weight_norm(v, g, 0), what the hook computes), and the
                            latents_mean / latents_std as tensors (comfy/ldm/minimax/audio_vae.py)
  text_encoder.safetensors  from qwen3vl_text/text_encoder: ComfyUI's Qwen3-VL module names (model.embed_tokens,
                            model.layers.i.*, visual.*), truncated after layer 3 (ComfyUI's H3 file stops after the
                            conditioning layer), no final norm or LM head

The names are not taken on trust: the script checks with the diffusers modules themselves that the fused q/k/v read
the ComfyUI way (view [.., heads, 3 * head_dim], chunk 3) gives each block's to_q / to_k / to_v outputs, that
w2(silu(first half of w1 x) * second half) is the block's FeedForward, and that the folded audio weights give the
diffusers model's decode. The C++ tests load these files and compare with the diffusers folders.
"""

import argparse
import json
from pathlib import Path

import diffusers
import torch
import torch.nn.functional as F
from diffusers import AutoencoderKLMiniMaxH3, AutoencoderKLMiniMaxH3Audio
from safetensors.torch import load_file, save_file

from golden_io import canonicalize_header

DATA = Path("tests/data")


def load_folder(model_class, folder: Path):
    config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k[0] != "_"}
    model = model_class(**config).float().eval()
    state = {}
    for shard in sorted(folder.glob("*.safetensors")):
        state.update(load_file(shard))
    model.load_state_dict(state, strict=True)
    return model, config, state


def original_video_vae_key(name: str) -> str:
    """A diffusers video VAE key under the original release's name (q/k/v handled by the caller)."""
    if name.startswith("encoder.down_blocks."):
        level, rest = name.removeprefix("encoder.down_blocks.").split(".", 1)
        rest = rest.replace("resnets.", "block.", 1).replace("conv_shortcut.", "nin_shortcut.", 1)
        rest = rest.replace("downsamplers.0.", "downsample.", 1)
        return f"encoder.down.{level}.{rest}"
    for old, new in ((".attn.to_out.0.", ".attn.to_out."), (".ff.net.0.proj.", ".ff.w1."), (".ff.net.2.", ".ff.w2.")):
        name = name.replace(old, new)
    return name.replace("decoder.proj_in.", "decoder.x_embedder.")


def video_vae_file(folder: Path) -> dict:
    model, config, state = load_folder(AutoencoderKLMiniMaxH3, folder)
    heads, head_dim = config["decoder_num_attention_heads"], config["decoder_attention_head_dim"]
    out = {}
    for name, tensor in state.items():
        if ".attn.to_k." in name or ".attn.to_v." in name:
            continue
        if ".attn.to_q." in name:
            parts = [state[name.replace(".to_q.", f".to_{p}.")] for p in "qkv"]
            # [3 x (heads * head_dim), ...] -> per head [q_h; k_h; v_h]
            fused = torch.stack([p.reshape(heads, head_dim, *p.shape[1:]) for p in parts], dim=1)
            out[name.replace(".to_q.", ".to_qkv.")] = fused.reshape(3 * heads * head_dim, *parts[0].shape[1:])
            continue
        if ".ff.net.0.proj." in name:
            up, gate = tensor.chunk(2, dim=0)  # diffusers' SwiGLU rows [value; gate]
            out[original_video_vae_key(name)] = torch.cat([gate, up], dim=0)
            continue
        out[original_video_vae_key(name)] = tensor
    dim = heads * head_dim
    out["decoder.mask_token"] = torch.zeros(1, 1, dim)
    out["latents_mean"] = torch.tensor(config["latents_mean"], dtype=torch.float32)
    out["latents_std"] = torch.tensor(config["latents_std"], dtype=torch.float32)

    # The ComfyUI reading of these tensors against the diffusers modules, block by block.
    torch.manual_seed(0)
    for i, block in enumerate(model.decoder.transformer_blocks):
        x = torch.randn(1, 7, dim)
        p = f"decoder.transformer_blocks.{i}."
        qkv = F.linear(x, out[p + "attn.to_qkv.weight"], out[p + "attn.to_qkv.bias"])
        q, k, v = qkv.view(1, 7, -1, 3 * head_dim).chunk(3, dim=-1)
        for got, layer in ((q, block.attn.to_q), (k, block.attn.to_k), (v, block.attn.to_v)):
            assert torch.equal(got.reshape(1, 7, dim), layer(x)), f"block {i}: fused qkv is not per-head interleaved"
        h = F.linear(x, out[p + "ff.w1.weight"], out[p + "ff.w1.bias"])
        gate, up = h.chunk(2, dim=-1)
        swiglu = F.linear(F.silu(gate) * up, out[p + "ff.w2.weight"], out[p + "ff.w2.bias"])
        assert torch.allclose(swiglu, block.ff(x), rtol=1e-6, atol=1e-6), f"block {i}: w1 is not [gate; up]"
    return out


def audio_vae_file(folder: Path) -> dict:
    model, config, state = load_folder(AutoencoderKLMiniMaxH3Audio, folder)
    out = {}
    for name, tensor in state.items():
        if name.endswith(".weight_g"):
            continue
        if name.endswith(".weight_v"):
            g = state[name[: -len("weight_v")] + "weight_g"]
            out[name[: -len("_v")]] = torch._weight_norm(tensor, g, 0)
            continue
        out[name] = tensor
    out["latents_mean"] = torch.tensor(config["latents_mean"], dtype=torch.float32)
    out["latents_std"] = torch.tensor(config["latents_std"], dtype=torch.float32)

    # The folded weights decode as the weight-normed model does (its hooks fold on every call).
    folded = AutoencoderKLMiniMaxH3Audio(**config).float().eval()
    for module in folded.modules():
        if hasattr(module, "weight_g"):
            torch.nn.utils.remove_weight_norm(module)
    folded.load_state_dict({k: v for k, v in out.items() if not k.startswith("latents_")}, strict=True)
    z = torch.randn(1, config["latent_channels"], 5, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.equal(folded.decode(z).sample, model.decode(z).sample), "folded weights decode differently"
    return out


def text_encoder_file(folder: Path, layers: int) -> dict:
    state = {}
    for shard in sorted(folder.glob("*.safetensors")):
        state.update(load_file(shard))
    out = {}
    for name, tensor in state.items():
        if name.startswith("model.visual."):
            out["visual." + name.removeprefix("model.visual.")] = tensor
        elif name.startswith("model.language_model."):
            rest = name.removeprefix("model.language_model.")
            if rest.startswith("layers.") and int(rest.split(".")[1]) >= layers:
                continue
            if rest.startswith("norm."):
                continue
            out["model." + rest] = tensor
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"diffusers_version": diffusers.__version__, "torch_version": torch.__version__}
    files = {
        "vae.safetensors": video_vae_file(DATA / "h3_video_vae_encoder" / "vae"),
        "audio_vae.safetensors": audio_vae_file(DATA / "h3_audio_vae_encoder" / "audio_vae"),
        "text_encoder.safetensors": text_encoder_file(DATA / "qwen3vl_text" / "text_encoder", layers=3),
    }
    for name, tensors in files.items():
        path = args.out / name
        save_file({k: v.contiguous() for k, v in sorted(tensors.items())}, str(path), metadata=meta)
        canonicalize_header(path)
        print(f"{path}: {path.stat().st_size} bytes, {len(tensors)} tensors")


if __name__ == "__main__":
    main()
