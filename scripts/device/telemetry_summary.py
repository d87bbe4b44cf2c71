"""Summarizes gpu_telemetry.sh's nvidia-smi samples per labelled run and GPU.

Usage: telemetry_summary.py telemetry.csv telemetry_marks.txt

telemetry.csv: nvidia-smi --format=csv,noheader,nounits lines of index, timestamp, SM MHz, power W,
power limit W, temperature C and (optionally) the software power-cap throttle reason ("Active").
telemetry_marks.txt: "timestamp<TAB>label" lines; each sample belongs to the last mark before it
(an empty label: between runs). Only busy samples count (power above a third of the limit), so
model loading and idle gaps do not pull the medians down.
"""
import statistics
import sys
from datetime import datetime

TIME_FORMAT = "%Y/%m/%d %H:%M:%S.%f"


def parse_time(text):
    return datetime.strptime(text.strip(), TIME_FORMAT)


def number(text):
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def read_marks(path):
    marks = []
    with open(path) as f:
        for line in f:
            if "\t" not in line:
                continue
            stamp, label = line.rstrip("\n").split("\t", 1)
            marks.append((parse_time(stamp), label))
    return sorted(marks, key=lambda m: m[0])


def read_samples(path):
    samples = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 6:
                continue
            try:
                when = parse_time(parts[1])
            except ValueError:
                continue
            capped = parts[6] if len(parts) > 6 else None
            samples.append({"gpu": parts[0], "time": when, "mhz": number(parts[2]), "watts": number(parts[3]),
                            "limit": number(parts[4]), "temp": number(parts[5]),
                            "capped": None if capped is None else capped.lower() == "active"})
    return samples


def label_at(marks, when):
    label = ""
    for stamp, name in marks:
        if stamp > when:
            break
        label = name
    return label


def summarize(samples, marks):
    """Rows of (label, gpu, stats) in the order the labels first appear."""
    groups = {}
    for s in samples:
        label = label_at(marks, s["time"])
        if not label or s["watts"] is None or s["limit"] is None or s["watts"] < s["limit"] / 3:
            continue
        groups.setdefault((label, s["gpu"]), []).append(s)
    rows = []
    for (label, gpu), group in groups.items():
        mhz = [s["mhz"] for s in group if s["mhz"] is not None]
        watts = [s["watts"] for s in group]
        temps = [s["temp"] for s in group if s["temp"] is not None]
        capped = [s["capped"] for s in group if s["capped"] is not None]
        rows.append((label, gpu, {
            "samples": len(group),
            "mhz_median": statistics.median(mhz) if mhz else None,
            "mhz_min": min(mhz) if mhz else None,
            "mhz_max": max(mhz) if mhz else None,
            "watts_median": statistics.median(watts),
            "limit": group[0]["limit"],
            "temp_max": max(temps) if temps else None,
            "capped_share": sum(capped) / len(capped) if capped else None,
        }))
    return rows


def show(value, fmt):
    return "-" if value is None else fmt.format(value)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: telemetry_summary.py telemetry.csv telemetry_marks.txt")
    try:
        rows = summarize(read_samples(sys.argv[1]), read_marks(sys.argv[2]))
    except FileNotFoundError as e:
        print(f"no GPU telemetry ({e.filename} is missing)")
        return
    if not rows:
        print("no GPU telemetry (no busy samples inside a labelled run)")
        return
    print(f"{'run':<28} {'gpu':>3} {'samples':>7} {'SM MHz median (min-max)':>24} {'W median / cap':>15} "
          f"{'max C':>5} {'power-capped':>12}")
    for label, gpu, s in rows:
        clock = f"{show(s['mhz_median'], '{:.0f}')} ({show(s['mhz_min'], '{:.0f}')}-{show(s['mhz_max'], '{:.0f}')})"
        power = f"{s['watts_median']:.0f} / {s['limit']:.0f}"
        print(f"{label:<28} {gpu:>3} {s['samples']:>7} {clock:>24} {power:>15} {show(s['temp_max'], '{:.0f}'):>5} "
              f"{show(s['capped_share'], '{:.0%}'):>12}")


if __name__ == "__main__":
    main()
