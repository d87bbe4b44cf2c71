#!/usr/bin/env python3
"""Full `orochi generate` runs at --precision fp8 / int8 (or another seed) against the bf16 run.

Each run is a folder (run_h3_precision_generate.sh makes them) holding the stage report run.json and
the output: video.y4m + audio.wav as ffmpeg_capture.py kept them (the FFmpeg-less build: the exact
8-bit frames and 16-bit sound, no codec), else run.mp4 decoded with PyAV (an FFmpeg build writes its
MP4 itself; run it at --crf 0 so the H.264 step is lossless on its 4:2:0 samples).

For each run against the reference, one marked line:
  PRECISION_GEN <label> video_psnr_db V y_psnr_db Y video_rel_l2 R audio_psnr_db A audio_rel_l2 Q
                e2e_s E step_s S denoise_s D gpu_denoise_gib U/P gpu_decode_gib U/P
video: every 8-bit Y'CbCr sample of every frame (peak 255; y_: luma alone); rel L2 of the samples
less their black level (Y - 16, Cb/Cr - 128) so it is relative to the picture, not the offsets.
audio: the waveform in [-1, 1] (16-bit / 32768), PSNR for peak-to-peak 2 as the engine's GPU test
(tests/cuda/test_engine_gpu_precision.cpp) does. step_s: the median step; gpu_*_gib: GPU memory in
use at the end of that phase / the planner's bytes for it (the report's peak_memory.gpus[0]).
The reference itself gets the same line with "ref" for the distances.

    python3 compare_h3_precision_generate.py --ref bf16=DIR fp8=DIR int8=DIR bf16_seed1=DIR
    python3 compare_h3_precision_generate.py --self-test   # synthetic pairs through ffmpeg_capture.py
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

GIB = float(1 << 30)


def read_y4m(path: str) -> np.ndarray:
    """[frames, planes, H, W] uint8 of an 8-bit Y4M whose FRAME lines carry no parameters."""
    with open(path, "rb") as f:
        header = f.readline().decode("ascii").split()
    if header[0] != "YUV4MPEG2":
        raise ValueError(f"{path}: not a Y4M file")
    fields = {t[0]: t[1:] for t in header[1:]}
    w, h, chroma = int(fields["W"]), int(fields["H"]), fields.get("C", "420jpeg")
    if chroma != "444":
        raise ValueError(f"{path}: chroma {chroma}; this reads the 8-bit 4:4:4 Y4M Orochi writes")
    start = len(" ".join(header)) + 1
    frame_bytes = 6 + 3 * w * h  # "FRAME\n" + three planes
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=start)
    if data.size % frame_bytes:
        raise ValueError(f"{path}: {data.size} bytes after the header is not whole {w}x{h} 4:4:4 frames")
    frames = data.reshape(-1, frame_bytes)
    if frames.shape[0] and bytes(frames[0, :6]) != b"FRAME\n":
        raise ValueError(f"{path}: frame header is not a bare FRAME line")
    return frames[:, 6:].reshape(-1, 3, h, w)


def read_mp4(path: str) -> tuple:
    """([frames, 3, H, W] uint8 Y'CbCr 4:4:4 (chroma upsampled), [samples, channels] float)."""
    import av  # only for an FFmpeg build's MP4 (the CPU check); the device path needs numpy alone

    with av.open(path) as c:
        video = np.stack([f.to_ndarray(format="yuv444p") for f in c.decode(video=0)])
    with av.open(path) as c:
        chunks = [f.to_ndarray() for f in c.decode(audio=0)]  # planar float: [channels, n]
    audio = np.concatenate(chunks, axis=1).T if chunks else np.zeros((0, 2), np.float32)
    return video, audio.astype(np.float64)


def read_wav(path: str) -> np.ndarray:
    """[samples, channels] float in [-1, 1] of a 16-bit PCM WAV."""
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"{path}: {8 * w.getsampwidth()}-bit samples; Orochi writes 16-bit")
        n, channels = w.getnframes(), w.getnchannels()
        raw = np.frombuffer(w.readframes(n), dtype="<i2")
    return raw.reshape(-1, channels).astype(np.float64) / 32768.0


def read_run(folder: str) -> tuple:
    """(video [F, 3, H, W] uint8, audio [n, c] float, stage report dict or None)."""
    y4m, wav, mp4 = (os.path.join(folder, n) for n in ("video.y4m", "audio.wav", "run.mp4"))
    if os.path.exists(y4m):
        video = read_y4m(y4m)
        audio = read_wav(wav) if os.path.exists(wav) else np.zeros((0, 2))
    elif os.path.exists(mp4):
        video, audio = read_mp4(mp4)
    else:
        raise FileNotFoundError(f"{folder}: neither video.y4m (ffmpeg_capture.py) nor run.mp4")
    report_path = os.path.join(folder, "run.json")
    report = json.load(open(report_path)) if os.path.exists(report_path) else None
    return video, audio, report


def psnr(sum_sq: float, count: int, peak_to_peak: float) -> float:
    if count == 0:
        return float("nan")
    return math.inf if sum_sq == 0 else 10.0 * math.log10(peak_to_peak ** 2 * count / sum_sq)


BLACK = np.array([16, 128, 128], dtype=np.float64).reshape(3, 1, 1)


def video_distance(got: np.ndarray, want: np.ndarray) -> dict:
    """PSNR of all samples and of luma, and rel L2 about the black level, frame by frame (the
    full-size outputs are ~150 MB each: no whole-video float copies)."""
    if got.shape != want.shape:
        raise ValueError(f"video shapes differ: {got.shape} vs {want.shape} [frames, planes, H, W]")
    sq = sq_y = ref_sq = 0.0
    for g, w in zip(got, want):  # [3, H, W]
        d = g.astype(np.int32) - w.astype(np.int32)
        d2 = d.astype(np.int64) ** 2
        sq += float(d2.sum())
        sq_y += float(d2[0].sum())
        ref_sq += float(((w - BLACK) ** 2).sum())
    n = got.size
    return {"video_psnr_db": psnr(sq, n, 255.0), "y_psnr_db": psnr(sq_y, n // 3, 255.0),
            "video_rel_l2": math.sqrt(sq / ref_sq) if ref_sq else float("nan")}


def audio_distance(got: np.ndarray, want: np.ndarray) -> dict:
    if got.shape != want.shape:
        raise ValueError(f"waveform shapes differ: {got.shape} vs {want.shape} [samples, channels]")
    sq, ref_sq = float(((got - want) ** 2).sum()), float((want ** 2).sum())
    return {"audio_psnr_db": psnr(sq, got.size, 2.0),
            "audio_rel_l2": math.sqrt(sq / ref_sq) if ref_sq else float("nan")}


def times_and_memory(report) -> dict:
    if report is None:
        return {}
    stages = report.get("stages_s", {})
    out = {"e2e_s": stages.get("e2e"), "step_s": stages.get("per_step", {}).get("median"),
           "denoise_s": stages.get("denoise"), "precision": report.get("precision")}
    gpus = report.get("peak_memory", {}).get("gpus", [])
    if gpus:
        g, planned = gpus[0], gpus[0].get("planned_bytes", {})
        for phase, used_key, plan_key in (("denoise", "used_bytes_end_of_denoise", "denoiser"),
                                          ("decode", "used_bytes_end_of_video_decode", "decode")):
            if used_key in g:
                out[f"gpu_{phase}_used_gib"] = g[used_key] / GIB
            if plan_key in planned:
                out[f"gpu_{phase}_planned_gib"] = planned[plan_key] / GIB
    return out


def fmt(v, spec: str) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return format(v, spec)


def marked_line(label: str, d: dict) -> str:
    parts = [f"PRECISION_GEN {label}"]
    for key, spec in (("video_psnr_db", ".2f"), ("y_psnr_db", ".2f"), ("video_rel_l2", ".3e"),
                      ("audio_psnr_db", ".2f"), ("audio_rel_l2", ".3e")):
        parts.append(f"{key} {fmt(d[key], spec) if key in d else 'ref'}")  # the reference has no distance
    for key, spec in (("e2e_s", ".2f"), ("step_s", ".3f"), ("denoise_s", ".2f")):
        parts.append(f"{key} {fmt(d.get(key), spec)}")
    for phase in ("denoise", "decode"):
        used, planned = d.get(f"gpu_{phase}_used_gib"), d.get(f"gpu_{phase}_planned_gib")
        if used is not None or planned is not None:
            parts.append(f"gpu_{phase}_gib {fmt(used, '.2f')}/{fmt(planned, '.2f')}")
    return " ".join(parts)


def compare(ref_spec: str, runs: list, jsonl: str = "") -> list:
    ref_label, ref_dir = ref_spec.split("=", 1)
    ref_video, ref_audio, ref_report = read_run(ref_dir)
    ref = {"frames": int(ref_video.shape[0]), **times_and_memory(ref_report)}
    results = [(ref_label, ref)]
    for spec in runs:
        label, folder = spec.split("=", 1)
        video, audio, report = read_run(folder)
        results.append((label, {**video_distance(video, ref_video), **audio_distance(audio, ref_audio),
                                **times_and_memory(report)}))
    for label, d in results:
        print(marked_line(label, d), flush=True)
        if jsonl:
            with open(jsonl, "a") as f:
                f.write(json.dumps({"label": label, "reference": ref_label, **d}) + "\n")
    return results


# --- self-test: synthetic pairs with known distances, kept by ffmpeg_capture.py as Orochi runs it ---

def write_y4m(path: str, frames: np.ndarray) -> None:  # [F, 3, H, W] uint8, as io/y4m_writer.cpp
    _, _, h, w = frames.shape
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F24:1 Ip A1:1 C444 XCOLORRANGE=LIMITED\n".encode())
        for fr in frames:
            f.write(b"FRAME\n" + fr.tobytes())


def write_wav(path: str, samples: np.ndarray) -> None:  # [n, c] int16
    with wave.open(path, "wb") as w:
        w.setnchannels(samples.shape[1]); w.setsampwidth(2); w.setframerate(48000)
        w.writeframes(samples.astype("<i2").tobytes())


def capture(tmp: str, name: str, frames: np.ndarray, samples: np.ndarray, report: dict) -> str:
    """Writes the pair into a scratch folder and runs ffmpeg_capture.py with mp4_program.cpp's argv."""
    scratch, folder = os.path.join(tmp, name + "_scratch"), os.path.join(tmp, name)
    os.makedirs(scratch); os.makedirs(folder)
    y4m, wav = os.path.join(scratch, "video.y4m"), os.path.join(scratch, "audio.wav")
    write_y4m(y4m, frames); write_wav(wav, samples)
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ffmpeg_capture.py")
    argv = [sys.executable, program, "-nostdin", "-y", "-loglevel", "error", "-i", y4m, "-i", wav,
            "-map", "0:v:0", "-c:v", "libx264", "-crf", "0", "-preset", "medium", "-pix_fmt", "yuv420p",
            "-map", "1:a:0", "-c:a", "aac", "-b:a", "192000", "-movflags", "+faststart",
            os.path.join(folder, ".run.mp4.tmp.mp4")]
    subprocess.run(argv, check=True, env={**os.environ, "FFMPEG_CAPTURE_DIR": folder})
    json.dump(report, open(os.path.join(folder, "run.json"), "w"))
    return folder


def self_test() -> int:
    rng = np.random.default_rng(0)
    frames = rng.integers(20, 230, size=(5, 3, 16, 24), dtype=np.uint8)
    samples = rng.integers(-20000, 20000, size=(4800, 2), dtype=np.int16)
    plus_one = np.where(rng.random(frames.shape) < 0.5, frames + 1, frames - 1).astype(np.uint8)
    report = {"precision": "bf16", "stages_s": {"e2e": 3.5, "denoise": 2.0, "per_step": {"median": 0.25}},
              "peak_memory": {"gpus": [{"used_bytes_end_of_denoise": 3 << 30, "used_bytes_end_of_video_decode": 1 << 30,
                                        "planned_bytes": {"denoiser": 4 << 30, "decode": 2 << 30}}]}}
    with tempfile.TemporaryDirectory() as tmp:
        a = capture(tmp, "a", frames, samples, report)
        same = capture(tmp, "same", frames, samples, report)
        off = capture(tmp, "off", plus_one, samples + 1, report)
        short = capture(tmp, "short", frames[:4], samples, report)
        assert sorted(os.listdir(a)) == [".run.mp4.tmp.mp4", "audio.wav", "run.json", "video.y4m"], os.listdir(a)
        assert not os.path.exists(os.path.join(tmp, "a_scratch", "video.y4m")), "the capture must move the Y4M"
        assert np.array_equal(read_y4m(os.path.join(a, "video.y4m")), frames), "Y4M read back differs"
        results = dict(compare(f"bf16={a}", [f"same={same}", f"off={off}"]))
        assert results["same"]["video_psnr_db"] == math.inf and results["same"]["audio_psnr_db"] == math.inf
        # Every sample off by one: MSE 1 -> 20 log10(255); every sample off by one LSB of 2^16 over 2.
        assert abs(results["off"]["video_psnr_db"] - 20 * math.log10(255)) < 1e-9, results["off"]
        assert abs(results["off"]["y_psnr_db"] - 20 * math.log10(255)) < 1e-9, results["off"]
        assert abs(results["off"]["audio_psnr_db"] - 20 * math.log10(65536)) < 1e-9, results["off"]
        rel = math.sqrt(frames.size / float(((frames - BLACK[None]) ** 2).sum()))
        assert abs(results["off"]["video_rel_l2"] - rel) < 1e-12, (results["off"]["video_rel_l2"], rel)
        assert abs(results["bf16"]["gpu_denoise_planned_gib"] - 4.0) < 1e-12 and results["bf16"]["step_s"] == 0.25
        try:
            compare(f"bf16={a}", [f"short={short}"])
            raise AssertionError("a run with fewer frames must be refused")
        except ValueError as e:
            assert "video shapes differ" in str(e), e
    print("SELF_TEST ok: capture keeps the Y4M/WAV, PSNR inf for equal runs, 48.13 / 96.33 dB for one-step offsets, "
          "unequal lengths refused")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", help="LABEL=FOLDER of the reference run (bf16)")
    ap.add_argument("runs", nargs="*", help="LABEL=FOLDER of each run to compare with it")
    ap.add_argument("--jsonl", default="", help="append one JSON line per run here")
    ap.add_argument("--self-test", action="store_true", help="check this script and ffmpeg_capture.py on synthetic data")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.ref or "=" not in args.ref or any("=" not in r for r in args.runs):
        ap.error("give --ref LABEL=FOLDER and runs as LABEL=FOLDER")
    compare(args.ref, args.runs, args.jsonl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
