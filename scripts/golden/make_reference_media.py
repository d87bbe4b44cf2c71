"""Golden data for reading and preprocessing ref2va / fl2va reference media (issue 28, REF2VA.md §1-§3).

Writes small media files (images, audio clips, a video with a soundtrack) and what diffusers' MiniMax-H3 pipeline
makes of them, for tests/test_io_media_in.cpp and tests/test_reference_preprocess.cpp:

- images: Pillow writes PNG (RGB, gray, gray+alpha, RGBA, palette, 16-bit gray, every EXIF orientation 2..8 in an
  eXIf chunk; 16-bit RGB/RGBA/gray+alpha and 1/2/4-bit gray written by hand), lossless and lossy WebP (with and
  without alpha), JPEG (an EXIF-rotated 4:2:0 one, 4:4:4, 4:2:2, gray); `load_image` (D's loader:
  open, exif_transpose, convert("RGB")) gives the decoded pixels; Pillow's LANCZOS gives resizes to small odd
  sizes (pixels stored) and D's own setup step (`MiniMaxH3Ref2VASetupStep`, 2048 short edge) and fl2va resize step
  (`MiniMaxH3ResizeStep`, stretch and cover-crop) give the pipeline's outputs (sizes + FNV-1a 64 of the bytes when
  too large to store);
- audio: deterministic waveforms at 44.1 / 48 / 22.05 / 16 kHz, mono and stereo, through D's
  `_normalize_audio_condition` (truncate, mono -> stereo, torchaudio Resample to 32 kHz); WAV / FLAC / MP3 / Ogg
  Opus / M4A AAC files and D's PyAV decode of each (`_decode_audio_file`);
- video: the 24 fps frame slots D's `_normalize_video_condition` picks for 25 / 30 / 60 / 12 / 23.976 / 29.97 fps
  sources (frames numbered by their pixels), truncation, its resize to its own canvas (hash), and a 30 fps H.264 +
  AAC MP4 (plus a copy whose display matrix says 90 degrees, made with the `ffmpeg` program) with D's
  `_decode_video_file` output;
- geometry: `resolve_canvas_size`, `align_num_frames`, the 2048-short-edge sizes and the `match` sizes of ComfyUI
  (a formula, not a diffusers helper: written out below) for a list of sizes.

Run (CPU only, a few seconds; byte-identical reruns):
    venv/bin/python scripts/golden/make_reference_media.py --out tests/data/reference_media
Needs the pinned venv (scripts/golden/requirements.txt) with torchaudio and av (PyAV), and the `ffmpeg` program.
"""
import argparse
import math
import struct
import subprocess
import sys
import wave
import zlib
from pathlib import Path
from types import SimpleNamespace

import av
import numpy as np
import torch
import torchaudio
from PIL import Image

from diffusers.modular_pipelines.minimax_h3 import references as refs
from diffusers.modular_pipelines.minimax_h3.before_encoder import MiniMaxH3Ref2VASetupStep, MiniMaxH3ResizeStep
from diffusers.modular_pipelines.minimax_h3.modular_pipeline import align_num_frames, resolve_canvas_size
from diffusers.utils import load_image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_io import print_sizes, save_golden  # noqa: E402


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def fnv_tensor(arr: np.ndarray) -> torch.Tensor:
    """The 64-bit hash as an int64 tensor (two's complement), so it survives safetensors."""
    h = fnv1a64(np.ascontiguousarray(arr, dtype=np.uint8).tobytes())
    return torch.tensor([h - (1 << 64) if h >= (1 << 63) else h], dtype=torch.int64)


def u8(arr) -> torch.Tensor:
    return torch.from_numpy(np.array(arr, dtype=np.uint8, copy=True))


def pattern(h: int, w: int, seed: int) -> np.ndarray:
    """Smooth gradients plus a few sharp edges and noise: LANCZOS overshoots on the edges (clipping is exercised)."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([
        127 + 120 * np.sin(x / max(w, 1) * 7 + seed),
        127 + 120 * np.cos(y / max(h, 1) * 5 + x / max(w, 1) * 2),
        (x * 255 / max(w - 1, 1)),
    ], axis=-1)
    img[(x.astype(int) // 5 + y.astype(int) // 7) % 4 == 0] = [255, 0, 255]
    img += rng.randint(-20, 21, size=img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------------------------------------- images
def write_png_raw(path: Path, width: int, height: int, depth: int, color_type: int, rows: list) -> None:
    """A PNG from raw scanlines (filter 0), for sample layouts Pillow does not write."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0)
    data = zlib.compress(b"".join(b"\x00" + r for r in rows), 9)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b""))


LANCZOS_SIZES = {  # name -> list of (W, H) to resize the decoded image to, with Pillow's LANCZOS
    "rgb_odd": [(101, 71), (23, 17), (67, 90), (131, 45)],
    "gray": [(77, 41), (25, 19)],
    "gray_alpha": [(41, 41)],
    "rgba": [(17, 93), (61, 89)],
    "palette": [(64, 58), (11, 13)],
    "gray16": [(20, 20)],
    "webp_lossless": [(74, 82), (9, 10)],
    "webp_lossy": [(30, 21)],
    "exif_jpeg": [(50, 75), (16, 24)],
}


def write_images(folder: Path, t: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    base = pattern(45, 67, 1)
    Image.fromarray(base).save(folder / "rgb_odd.png")
    files["rgb_odd"] = "rgb_odd.png"
    Image.fromarray(pattern(38, 50, 2)).convert("L").save(folder / "gray.png")
    files["gray"] = "gray.png"
    la = Image.merge("LA", [Image.fromarray(pattern(33, 29, 3)).convert("L"),
                            Image.fromarray(pattern(33, 29, 4)[..., 0])])
    la.save(folder / "gray_alpha.png")
    files["gray_alpha"] = "gray_alpha.png"
    rgba = np.concatenate([pattern(60, 40, 5), pattern(60, 40, 6)[..., :1]], axis=-1)
    rgba[::7, :, 3] = 0  # fully transparent rows keep their colour: convert("RGB") drops alpha, no compositing
    Image.fromarray(rgba, "RGBA").save(folder / "rgba.png")
    files["rgba"] = "rgba.png"
    Image.fromarray(pattern(29, 33, 7)).quantize(colors=61, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE) \
        .save(folder / "palette.png")
    files["palette"] = "palette.png"
    g16 = (np.arange(12 * 10).reshape(12, 10) * 3).astype(np.uint16)  # 0..357: PIL clips I;16 -> RGB at 255
    Image.fromarray(g16).save(folder / "gray16.png")  # uint16 -> mode I;16, written as a 16-bit gray PNG
    files["gray16"] = "gray16.png"
    Image.fromarray(pattern(41, 37, 8)).save(folder / "webp_lossless.webp", lossless=True, exact=True)
    files["webp_lossless"] = "webp_lossless.webp"
    Image.fromarray(pattern(40, 55, 11)).save(folder / "webp_lossy.webp", quality=90)  # VP8, 4:2:0, odd width
    files["webp_lossy"] = "webp_lossy.webp"
    rgba_lossy = np.concatenate([pattern(33, 27, 13), pattern(33, 27, 14)[..., :1]], axis=-1)
    Image.fromarray(rgba_lossy, "RGBA").save(folder / "webp_lossy_alpha.webp", quality=85)  # VP8 + ALPH
    files["webp_lossy_alpha"] = "webp_lossy_alpha.webp"
    # A JPEG whose EXIF says "rotate 90 clockwise to display" (orientation 6): stored 48 wide, 32 high.
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(pattern(32, 48, 9)).save(folder / "exif_jpeg.jpg", quality=95, exif=exif.tobytes())
    files["exif_jpeg"] = "exif_jpeg.jpg"
    # More JPEG layouts: 4:4:4, 4:2:2, gray.
    Image.fromarray(pattern(37, 51, 20)).save(folder / "jpeg444.jpg", quality=90, subsampling=0)
    Image.fromarray(pattern(37, 51, 21)).save(folder / "jpeg422.jpg", quality=90, subsampling=1)
    Image.fromarray(pattern(37, 51, 22)).convert("L").save(folder / "jpeg_gray.jpg", quality=90)
    files.update(jpeg444="jpeg444.jpg", jpeg422="jpeg422.jpg", jpeg_gray="jpeg_gray.jpg")
    # PNG layouts Pillow reads but does not write: 16-bit RGB, RGBA and gray+alpha (PIL keeps the high byte),
    # 1/2/4-bit gray (PIL scales them up).
    rng = np.random.RandomState(21)
    for name, depth, ctype, channels in [("rgb48", 16, 2, 3), ("rgba64", 16, 6, 4), ("la16", 16, 4, 2)]:
        samples = rng.randint(0, 65536, size=(7, 13, channels)).astype(">u2")
        write_png_raw(folder / f"{name}.png", 13, 7, depth, ctype, [row.tobytes() for row in samples])
        files[name] = f"{name}.png"
    for bits in (1, 2, 4):
        values = rng.randint(0, 2 ** bits, size=(7, 13))
        rows = []
        for row in values:
            text = "".join(format(int(v), f"0{bits}b") for v in row)
            text += "0" * (-len(text) % 8)
            rows.append(int(text, 2).to_bytes(len(text) // 8, "big"))
        write_png_raw(folder / f"gray{bits}bit.png", 13, 7, bits, 0, rows)
        files[f"gray{bits}bit"] = f"gray{bits}bit.png"
    # Every orientation on a lossless PNG (eXIf chunk), so the transposes are checked bit for bit.
    src = pattern(9, 14, 10)
    for orientation in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        name = f"orient{orientation}"
        Image.fromarray(src).save(folder / f"{name}.png", exif=exif.tobytes())
        files[name] = f"{name}.png"

    names = sorted(files)
    t["images.names"] = u8(np.frombuffer(("\n".join(f"{n} {files[n]}" for n in names)).encode(), dtype=np.uint8))
    for name in names:
        img = load_image(str(folder / files[name]))  # D's loader
        rgb = np.asarray(img)
        t[f"img.{name}.rgb"] = u8(rgb)
        for (w, h) in LANCZOS_SIZES.get(name, []):
            t[f"img.{name}.lanczos.{w}x{h}"] = u8(img.resize((w, h), Image.Resampling.LANCZOS))

    # D's ref2va setup step on real images: 2048 short edge (upscaling, no cap), LANCZOS. Too large to store:
    # the size and a hash of the bytes.
    blocks = MiniMaxH3Ref2VASetupStep()
    pipe = blocks.init_pipeline()
    pipe.load_components()
    for name in ["rgb_odd", "gray", "rgba", "exif_jpeg"]:
        img = load_image(str(folder / files[name]))
        out = pipe(references=[refs.MiniMaxH3ImageReference(image=img)], num_frames=124,
                   output="normalized_references")[0].image
        arr = np.asarray(out)
        t[f"ref2va.{name}.size"] = torch.tensor([arr.shape[1], arr.shape[0]], dtype=torch.int64)
        t[f"ref2va.{name}.fnv"] = fnv_tensor(arr)

    # D's fl2va resize step: the first keyframe stretched, the second cover-cropped, at an explicit small canvas
    # and at the canvas the first keyframe resolves to.
    resize_blocks = MiniMaxH3ResizeStep()
    rpipe = resize_blocks.init_pipeline()
    rpipe.load_components()
    first = load_image(str(folder / files["rgb_odd"]))
    last = load_image(str(folder / files["rgba"]))
    for tag, (w, h) in {"small": (96, 64), "tall": (64, 160)}.items():
        kf = rpipe(image=first, last_image=last, height=h, width=w, output="keyframes")
        t[f"fl2va.{tag}.first"] = u8(kf[0])
        t[f"fl2va.{tag}.last"] = u8(kf[1])
    kf = rpipe(image=first, last_image=last, output="keyframes")
    t["fl2va.auto.size"] = torch.tensor([kf[0].size[0], kf[0].size[1]], dtype=torch.int64)
    t["fl2va.auto.first_fnv"] = fnv_tensor(np.asarray(kf[0]))
    t["fl2va.auto.last_fnv"] = fnv_tensor(np.asarray(kf[1]))


# ---------------------------------------------------------------------------------------------------------- audio
def waveform(rate: int, channels: int, seconds: float, seed: int) -> torch.Tensor:
    n = int(round(rate * seconds))
    time = np.arange(n) / rate
    rng = np.random.RandomState(seed)
    chans = []
    for c in range(channels):
        x = 0.4 * np.sin(2 * np.pi * (440 + 110 * c) * time) + 0.2 * np.sin(2 * np.pi * 9000 * time)
        x += 0.1 * rng.standard_normal(n)  # broadband: the low-pass shows
        x[n // 3] = 0.95  # a click
        chans.append(x)
    return torch.from_numpy(np.stack(chans).astype(np.float32))


def write_audio(folder: Path, t: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    normalize = MiniMaxH3Ref2VASetupStep._normalize_audio_condition
    cases = [(44100, 1, 0.12), (48000, 2, 0.1), (22050, 2, 0.12), (16000, 1, 0.15), (32000, 2, 0.05), (8000, 1, 0.2)]
    for i, (rate, channels, seconds) in enumerate(cases):
        x = waveform(rate, channels, seconds, seed=10 + i)
        key = f"resample.{rate}.{channels}"
        t[f"{key}.in"] = x
        # max_duration cuts the input short at 80% (the truncation happens at the native rate).
        max_duration = seconds * 0.8
        t[f"{key}.max_duration"] = torch.tensor([max_duration], dtype=torch.float64)
        t[f"{key}.out"] = normalize(x, rate, 32000, max_duration).contiguous()
        # torchaudio's transform alone, on the untruncated input (the kernel and the output length).
        if rate == 44100:
            t[f"{key}.torchaudio"] = torchaudio.transforms.Resample(rate, 32000)(x).contiguous()

    # Files for the reader: WAV (s16), FLAC (s16), MP3, Ogg Opus, M4A AAC; D's decode of each.
    x = waveform(44100, 2, 0.1, seed=30)
    pcm = (np.clip(x.numpy().T, -1, 1) * 32767).round().astype("<i2")
    with wave.open(str(folder / "stereo_44100.wav"), "wb") as wf:
        wf.setnchannels(2)
        wf.setsampwidth(2)
        wf.setframerate(44100)
        wf.writeframes(pcm.tobytes())
    encode_audio(folder / "mono_16000.flac", waveform(16000, 1, 0.15, seed=31), 16000, "flac", "s16")
    encode_audio(folder / "stereo_44100.mp3", waveform(44100, 2, 0.1, seed=32), 44100, "libmp3lame", "fltp")
    encode_audio(folder / "mono_48000.ogg", waveform(48000, 1, 0.1, seed=33), 48000, "libopus", "flt")
    encode_audio(folder / "stereo_48000.m4a", waveform(48000, 2, 0.1, seed=34), 48000, "aac", "fltp")
    names = ["stereo_44100.wav", "mono_16000.flac", "stereo_44100.mp3", "mono_48000.ogg", "stereo_48000.m4a"]
    t["audio.names"] = u8(np.frombuffer("\n".join(names).encode(), dtype=np.uint8))
    for name in names:
        wav, rate = refs._decode_audio_file(str(folder / name))
        t[f"file.{name}.samples"] = wav.contiguous()
        t[f"file.{name}.rate"] = torch.tensor([rate], dtype=torch.int64)


def encode_audio(path: Path, x: torch.Tensor, rate: int, codec: str, fmt: str) -> None:
    channels = x.shape[0]
    layout = "mono" if channels == 1 else "stereo"
    # bitexact: no random Ogg serial numbers or encoder version strings, so reruns give the same bytes.
    with av.open(str(path), "w", options={"fflags": "+bitexact"}) as out:
        stream = out.add_stream(codec, rate=rate, layout=layout)
        stream.codec_context.thread_count = 1
        if codec != "flac":
            stream.bit_rate = 96000
        frame_size = stream.codec_context.frame_size or 1024
        data = x.numpy()
        pts = 0
        for start in range(0, data.shape[1], frame_size):
            chunk = data[:, start:start + frame_size]
            if fmt == "s16":
                arr = (np.clip(chunk, -1, 1) * 32767).round().astype(np.int16).T.reshape(1, -1).copy()
                frame = av.AudioFrame.from_ndarray(arr, format="s16", layout=layout)
            elif fmt == "flt":
                frame = av.AudioFrame.from_ndarray(chunk.T.reshape(1, -1).copy(), format="flt", layout=layout)
            else:
                frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(chunk), format="fltp", layout=layout)
            frame.sample_rate = rate
            frame.pts = pts
            pts += chunk.shape[1]
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


# ---------------------------------------------------------------------------------------------------------- video
def write_video(folder: Path, t: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    normalize = MiniMaxH3Ref2VASetupStep._normalize_video_condition
    # Frame slots: frames at the canvas size already (768x768 for a square source), so D does not resize, and each
    # frame's index written into its first pixel (R = i % 256, G = i // 256).
    for fps, n, num_frames in [(25.0, 50, 124), (30.0, 45, 124), (60.0, 90, 124), (12.0, 20, 124),
                               (24000 / 1001, 40, 124), (30000 / 1001, 45, 124), (24.0, 30, 22), (30.0, 200, 124),
                               (12.5, 7, 124)]:
        frames = np.zeros((n, 768, 768, 3), dtype=np.uint8)
        frames[:, 0, 0, 0] = np.arange(n) % 256
        frames[:, 0, 0, 1] = np.arange(n) // 256
        out = normalize(frames, fps, num_frames, 32, 768, 768 * 1344, 24.0)
        idx = out[:, 0, 0, 0].astype(np.int64) + 256 * out[:, 0, 0, 1].astype(np.int64)
        key = f"slots.{fps:.6f}.{n}.{num_frames}"
        t[f"{key}.indices"] = torch.from_numpy(idx)
        t[f"{key}.fps"] = torch.tensor([fps], dtype=torch.float64)
        t[f"{key}.counts"] = torch.tensor([n, num_frames], dtype=torch.int64)
    # The resize to its own canvas (a 16:9 40x24 source at 30 fps -> 1344x768): size and hash.
    small = np.stack([pattern(24, 40, 40 + i) for i in range(6)])
    out = normalize(small, 30.0, 124, 32, 768, 768 * 1344, 24.0)
    t["normalize.small.in"] = u8(small)
    t["normalize.small.shape"] = torch.tensor(out.shape, dtype=torch.int64)
    t["normalize.small.fnv"] = fnv_tensor(out)

    # An MP4 (H.264 yuv420p 48x32 at 30 fps, 10 frames, AAC mono 48 kHz) and D's decode of it.
    path = folder / "clip_30fps.mp4"
    with av.open(str(path), "w") as out_file:
        v = out_file.add_stream("libx264", rate=30)
        v.width, v.height, v.pix_fmt = 48, 32, "yuv420p"
        v.codec_context.thread_count = 1
        v.options = {"crf": "18", "threads": "1"}
        a = out_file.add_stream("aac", rate=48000, layout="mono")
        a.bit_rate = 64000
        for i in range(10):
            frame = av.VideoFrame.from_ndarray(pattern(32, 48, 50 + i), format="rgb24")
            frame.pts = i
            for p in v.encode(frame):
                out_file.mux(p)
        for p in v.encode(None):
            out_file.mux(p)
        wav = waveform(48000, 1, 10 / 30, seed=60).numpy()
        for start in range(0, wav.shape[1], 1024):
            frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(wav[:, start:start + 1024]), format="fltp",
                                               layout="mono")
            frame.sample_rate = 48000
            frame.pts = start
            for p in a.encode(frame):
                out_file.mux(p)
        for p in a.encode(None):
            out_file.mux(p)
    rotated = folder / "clip_30fps_rot90.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(path), "-c", "copy", "-map_metadata", "-1",
                    "-fflags", "+bitexact", "-metadata:s:v:0", "rotate=90", str(rotated)], check=True)
    for name in ["clip_30fps.mp4", "clip_30fps_rot90.mp4"]:
        frames, fps, audio, rate = refs._decode_video_file(str(folder / name))
        key = f"file.{name}"
        t[f"{key}.frames"] = u8(frames)
        t[f"{key}.fps"] = torch.tensor([fps], dtype=torch.float64)
        t[f"{key}.audio"] = audio.contiguous()
        t[f"{key}.rate"] = torch.tensor([rate], dtype=torch.int64)
        # File to VAE input, D's whole chain: the frames on 24 fps and their own canvas (hash), and the
        # soundtrack truncated (to 0.2 s here, to keep the file small), made stereo and resampled to 32 kHz.
        out = normalize(frames, fps, 124, 32, 768, 768 * 1344, 24.0)
        t[f"{key}.normalized_shape"] = torch.tensor(out.shape, dtype=torch.int64)
        t[f"{key}.normalized_fnv"] = fnv_tensor(out)
        t[f"{key}.soundtrack_32k"] = MiniMaxH3Ref2VASetupStep._normalize_audio_condition(
            audio, rate, 32000, 0.2).contiguous()


# ------------------------------------------------------------------------------------------------------- geometry
def write_geometry(t: dict) -> None:
    sizes = [(16, 9), (9, 16), (1, 1), (4, 3), (3, 4), (21, 9), (4, 1), (1, 4), (1920, 1080), (1280, 720),
             (854, 480), (832, 480), (67, 45), (1000, 1001), (3001, 751), (751, 3001), (640, 641), (1366, 768),
             (500, 2000), (2000, 500), (17, 23), (3648, 2048)]
    rows = []
    for w, h in sizes:
        ch, cw = resolve_canvas_size(w, h, 32, 768, 768 * 1344)
        # D's inline 2048-short-edge rule of MiniMaxH3Ref2VASetupStep.__call__ (not a helper of its own).
        scale = 2048 / min(w, h)
        rh, rw = max(32, round(h * scale / 32) * 32), max(32, round(w * scale / 32) * 32)
        # ComfyUI's "match" against a 1344x768 canvas (MiniMaxH3ReferenceToVideo).
        ms = min(1.0, math.sqrt((1344 * 768) / (w * h)))
        mw, mh = max(32, round(w * ms / 32) * 32), max(32, round(h * ms / 32) * 32)
        # D's fl2va cover crop of a w x h keyframe onto 1344x768 (MiniMaxH3ResizeStep.__call__, inline).
        cs = max(1344 / w, 768 / h)
        crw, crh = max(1344, round(w * cs)), max(768, round(h * cs))
        rows.append([w, h, cw, ch, rw, rh, mw, mh, crw, crh, max(0, (crw - 1344) // 2), max(0, (crh - 768) // 2)])
    t["geometry.sizes"] = torch.tensor(rows, dtype=torch.int64)
    frames = list(range(1, 400, 7)) + [124, 125, 345, 346, 22, 21, 5, 4]
    t["geometry.align"] = torch.tensor([[f, align_num_frames(f, 17, 5)] for f in frames], dtype=torch.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"generator": "scripts/golden/make_reference_media.py", "torch": torch.__version__,
            "torchaudio": torchaudio.__version__, "pillow": Image.__version__, "av": av.__version__}
    for name, writer in [("images", lambda t: write_images(args.out / "images", t)),
                         ("audio", lambda t: write_audio(args.out / "audio", t)),
                         ("video", lambda t: write_video(args.out / "video", t)),
                         ("geometry", write_geometry)]:
        t = {}
        writer(t)
        save_golden(args.out / f"{name}.safetensors", t, meta)
    print_sizes(args.out)


if __name__ == "__main__":
    main()
