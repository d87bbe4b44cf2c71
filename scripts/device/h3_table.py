"""Prints one table of orochi vs diffusers H3 forward times from the two JSONL files of a device run."""
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip().startswith("{")]
    except FileNotFoundError:
        return []


def main():
    ours, peers = load(sys.argv[1]), load(sys.argv[2])
    print(f"{'res':>5} {'seq':>7} {'orochi s (min-max)':>22} {'TFLOP/s':>8} {'%ceil':>6} {'diffusers s':>12} {'ratio':>6}")
    for o in ours:
        p = next((p for p in peers if p["res"] == o["res"] and p["gpus"] == 1), None)
        ps = f"{p['forward_s_median']:.3f}" if p else "-"
        ratio = f"{o['forward_s_median'] / p['forward_s_median']:.3f}" if p else "-"
        span = f"{o['forward_s_median']:.3f} ({o['forward_s_min']:.3f}-{o['forward_s_max']:.3f})"
        print(f"{o['res']:>5} {o['seq']:>7} {span:>22} {o['tflops']:>8.0f} {100 * o['fraction_of_ceiling']:>5.0f}% {ps:>12} {ratio:>6}")


if __name__ == "__main__":
    main()
