"""GPU-to-GPU copy traffic shaped like SP2's Ulysses exchanges, for a clock experiment.

An SP2 forward at 1344x768 moves, per block and per direction, q/k/v (3 x 18,983 rows x 3,584
bf16 = 408 MB) and then o (136 MB) over NVLink by the copy engines: about 27 GB per 2.9 s forward.
This script repeats that pattern between two GPUs (both directions at once, copy engines only: no
kernel touches the SMs) for --seconds, so a one-GPU forward run beside it shows whether the
traffic alone lowers the SM clock under the power cap (scripts/device/sp_clock_probe.sh).

  python3 scripts/device/p2p_load.py --seconds 60 [--period-ms 58 --qkv-mb 408 --o-mb 136]

--qkv-mb 1 --o-mb 1 keeps the link busy with almost no bytes (is the cost per byte or for the link
being in use?); --qkv-mb 0 --o-mb 0 moves nothing (does a second process's context alone cost?).
"""
import argparse
import signal
import time

import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--period-ms", type=float, default=58.0, help="one block of the 768p SP2 forward")
    p.add_argument("--qkv-mb", type=float, default=408.0)
    p.add_argument("--o-mb", type=float, default=136.0)
    p.add_argument("--devices", type=int, nargs=2, default=[0, 1])
    args = p.parse_args()
    a, b = args.devices
    if torch.cuda.device_count() <= max(a, b):
        raise SystemExit(f"needs GPUs {a} and {b}; this machine has {torch.cuda.device_count()}")
    elements = max(1, int(max(args.qkv_mb, args.o_mb) * 2**20 // 2))
    bufs = {d: (torch.empty(elements, dtype=torch.bfloat16, device=d),
                torch.empty(elements, dtype=torch.bfloat16, device=d)) for d in (a, b)}
    for d in (a, b):
        bufs[d][0].normal_()
    streams = {d: torch.cuda.Stream(device=d) for d in (a, b)}
    qkv = int(args.qkv_mb * 2**20 // 2)
    o = int(args.o_mb * 2**20 // 2)
    moved = 0
    start = time.perf_counter()
    periods = 0
    stop = []  # SIGTERM (the probe script kills the load when its forward is done): report and end
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    while time.perf_counter() - start < args.seconds and not stop:
        t0 = time.perf_counter()
        for n in (qkv, o):  # each direction pushes into the other GPU's receive buffer
            if n == 0:  # --qkv-mb 0 --o-mb 0: the contexts on both GPUs, no traffic (a control)
                continue
            for src, dst in ((a, b), (b, a)):
                with torch.cuda.stream(streams[src]):
                    bufs[dst][1][:n].copy_(bufs[src][0][:n], non_blocking=True)
            moved += 2 * n * 2
        for d in (a, b):  # the copy may run on either device's current stream
            torch.cuda.synchronize(d)
        periods += 1
        rest = args.period_ms / 1000 - (time.perf_counter() - t0)
        if rest > 0:
            time.sleep(rest)
    elapsed = time.perf_counter() - start
    print(f"p2p_load: {periods} periods in {elapsed:.1f} s, {moved / elapsed / 1e9:.1f} GB/s both directions together")


if __name__ == "__main__":
    main()
