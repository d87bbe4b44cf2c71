#!/usr/bin/env python3
"""Our H3 forward at --precision fp8 / int8 against our bf16 forward on the same weights and request.

`orochi bench dit --dump-outputs FILE` writes one forward's request and outputs (bench_dit.cpp's
dump_forward); the weights come from the seed, so runs that differ only in --precision hold the same
bf16 values before quantization. For each dump given after --bf16, prints rel L2 and cosine of the
video and audio outputs against the bf16 dump as one marked line, and appends a JSON line to
$OUT/compare_h3_precision.jsonl. numpy only (the safetensors layout is read by hand).

    python3 compare_h3_precision.py --label 480p --bf16 bf16.safetensors fp8.safetensors int8.safetensors
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "I64": np.int64, "BF16": None}


def read_safetensors(path: str) -> dict:
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or DTYPES.get(info["dtype"]) is None:
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def rel_l2(ours: np.ndarray, ref: np.ndarray) -> float:
    ours, ref = ours.astype(np.float64), ref.astype(np.float64)
    return float(np.linalg.norm(ours - ref) / max(np.linalg.norm(ref), 1e-300))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-300))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True, help="what the lines say the dumps are (e.g. 480p, or 480p/10 layers)")
    ap.add_argument("--bf16", required=True, help="the bf16 dump, the reference")
    ap.add_argument("--ref-name", default="bf16", help="what the reference is called in the lines")
    ap.add_argument("dumps", nargs="+", help="the fp8 / int8 dumps (named *_fp8.* / *_int8.*)")
    args = ap.parse_args()
    ref = read_safetensors(args.bf16)
    status = 0
    for path in args.dumps:
        got = read_safetensors(path)
        name = os.path.basename(path).rsplit(".", 1)[0].rsplit("_", 1)[-1]
        # Same request: the inputs must be identical, or the comparison means nothing.
        for key in ("video_in", "audio_in", "text_in", "timesteps", "positions"):
            if not np.array_equal(got[key], ref[key]):
                print(f"PRECISION_ACC {args.label} {name}: FAIL, {key} differs from the {args.ref_name} run's request")
                status = 1
        row = {"label": args.label, "precision": name, "reference": args.ref_name}
        for out in ("video_out", "audio_out"):
            finite = bool(np.isfinite(got[out]).all())
            row[out] = {"rel_l2": rel_l2(got[out], ref[out]), "cosine": cosine(got[out], ref[out]), "finite": finite}
            status |= 0 if finite else 1
        v, a = row["video_out"], row["audio_out"]
        print(f"PRECISION_ACC {args.label:<16} {name:<5} vs {args.ref_name}: video rel_l2={v['rel_l2']:.3e} cos={v['cosine']:.6f} | "
              f"audio rel_l2={a['rel_l2']:.3e} cos={a['cosine']:.6f}{'' if v['finite'] and a['finite'] else ' NONFINITE'}")
        with open(os.path.join(os.environ.get("OUT", "/tmp/out"), "compare_h3_precision.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
