"""Writing golden files so reruns give identical bytes, shared by the make_*.py scripts."""
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def canonicalize_header(path: Path) -> None:
    """safetensors writes `__metadata__` from a hash map, so its key order (and the file's bytes) changes from run to
    run. Rewrite the header with the metadata keys sorted; the header length, offsets and data are unchanged."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None)
    canon = {}
    if meta is not None:
        canon["__metadata__"] = dict(sorted(meta.items()))
    canon.update(sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]))
    text = json.dumps(canon, separators=(",", ":"), ensure_ascii=False).encode()
    if len(text) > n:
        raise AssertionError("canonical header is longer than the original")
    path.write_bytes(raw[:8] + text + b" " * (n - len(text)) + raw[8 + n:])


def save_golden(path: Path, tensors: dict, metadata: dict) -> None:
    """Save, canonicalize, and check that the file reads back to the same tensors."""
    save_file(tensors, path, metadata=metadata)
    canonicalize_header(path)
    check = load_file(path)
    assert set(check) == set(tensors) and all(torch.equal(check[k], tensors[k]) for k in tensors)


def print_sizes(folder: Path) -> None:
    """Every file under `folder` with its size, and the total (the goldens are kept small)."""
    total = 0
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            total += p.stat().st_size
            print(f"{p.stat().st_size:>9}  {p.relative_to(folder)}")
    print(f"{total:>9}  total")
