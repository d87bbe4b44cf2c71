"""One table of orochi's 1- and 2-GPU H3 forward times, the speed-up over one GPU and diffusers'
Ulysses time from the same device run (JSONL from orochi bench dit --json and peer_h3.py)."""
import sys

from h3_table import load  # the JSONL reader of the one-GPU table


ours, peers = load(sys.argv[1]), load(sys.argv[2])
print(f"{'res':>5} {'gpus':>4} {'layout':>8} {'orochi s (min-max)':>22} {'speed-up':>8} {'diffusers s':>12} {'ratio':>6}")
for o in ours:
    gpus = o.get("gpus", 1)
    one = next((x for x in ours if x["res"] == o["res"] and x.get("gpus", 1) == 1), None)
    p = next((p for p in peers if p["res"] == o["res"] and p["gpus"] == gpus), None)
    layout = f"tp{o.get('tp', 1)}xsp{o.get('sp', 1)}"
    span = f"{o['forward_s_median']:.3f} ({o['forward_s_min']:.3f}-{o['forward_s_max']:.3f})"
    speedup = f"{one['forward_s_median'] / o['forward_s_median']:.3f}" if one else "-"
    ps = f"{p['forward_s_median']:.3f}" if p else "-"
    ratio = f"{o['forward_s_median'] / p['forward_s_median']:.3f}" if p else "-"
    print(f"{o['res']:>5} {gpus:>4} {layout:>8} {span:>22} {speedup:>8} {ps:>12} {ratio:>6}")
