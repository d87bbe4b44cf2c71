"""Comparison helpers shared by the device comparison scripts (compare_h3_full.py, compare_qwen3vl_full.py)."""
import torch


def rel_l2(ours: torch.Tensor, ref: torch.Tensor) -> float:
    """||ours - ref|| / ||ref||, in float64."""
    ours, ref = ours.double(), ref.double()
    return float(torch.linalg.vector_norm(ours - ref) / torch.linalg.vector_norm(ref).clamp_min(1e-300))
