#!/usr/bin/env python3
"""Makes issue 23's ref2va benchmark references as uncompressed files, which a build without FFmpeg's
libraries reads (src/io/raw_media_in.h), with numpy alone (the device machine has no ffmpeg program):
  wide.ppm 1920x1080 (16:9), square.ppm 1536x1536, tall.ppm 1200x1600 (3:4), landscape.ppm
  1800x1200 (3:2): four pictures that the 2048 rule puts at 3648x2048, 2048x2048, 2048x2720 and
  3072x2048 (the release upscales smaller pictures; --ref-size match scales them to the target);
  clip.y4m 1280x720 at 30 fps, 5 s (150 frames, 4:4:4), and clip.wav beside it, its 48 kHz stereo
  soundtrack (Y4M has no sound: a WAV of the same name is its soundtrack);
  voice.wav: a 4 s 44.1 kHz mono clip.
The pictures are gradients with moving shapes, not noise, so the VAE sees image-like input.
Usage: python3 scripts/device/make_ref2va_media.py DIR"""
import os
import sys

import numpy as np


def picture(w, h, seed):
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r = 127 + 120 * np.sin(x / (37 + seed) + seed)
    g = 127 + 120 * np.cos(y / (53 + seed))
    b = 127 + 120 * np.sin((x + y) / (71 + 3 * seed))
    disc = (x - w * 0.4) ** 2 + (y - h * 0.5) ** 2 < (min(w, h) * 0.2) ** 2
    rgb = np.stack([r, g, b], axis=-1)
    rgb[disc] = [230, 40 + 20 * seed, 60]
    return np.clip(rgb, 0, 255).astype(np.uint8)


def write_ppm(path, rgb):
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (rgb.shape[1], rgb.shape[0]))
        f.write(rgb.tobytes())


def write_wav(path, samples, rate):  # float [C, N] -> 16-bit PCM
    pcm = (np.clip(samples, -1, 1) * 32767).round().astype("<i2").T.copy()
    channels, data = samples.shape[0], pcm.tobytes()
    header = b"RIFF" + (36 + len(data)).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    header += (1).to_bytes(2, "little") + channels.to_bytes(2, "little") + rate.to_bytes(4, "little")
    header += (rate * channels * 2).to_bytes(4, "little") + (channels * 2).to_bytes(2, "little")
    header += (16).to_bytes(2, "little") + b"data" + len(data).to_bytes(4, "little")
    with open(path, "wb") as f:
        f.write(header + data)


def write_y4m(path, frames, fps):  # uint8 [F, H, W, 3] -> 4:4:4 BT.601 limited range (io/y4m_writer's)
    f_count, h, w, _ = frames.shape
    with open(path, "wb") as f:
        f.write(b"YUV4MPEG2 W%d H%d F%d:1 Ip A1:1 C444 XCOLORRANGE=LIMITED\n" % (w, h, fps))
        for frame in frames:
            rgb = frame.astype(np.float64) / 255.0
            r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
            y = 16 + 65.481 * r + 128.553 * g + 24.966 * b
            cb = 128 - 37.797 * r - 74.203 * g + 112.0 * b
            cr = 128 + 112.0 * r - 93.786 * g - 18.214 * b
            f.write(b"FRAME\n")
            f.write(np.clip(np.rint(np.stack([y, cb, cr])), 0, 255).astype(np.uint8).tobytes())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "ref2va_media"
    os.makedirs(out, exist_ok=True)
    for i, (name, w, h) in enumerate([("wide", 1920, 1080), ("square", 1536, 1536), ("tall", 1200, 1600),
                                      ("landscape", 1800, 1200)]):
        write_ppm(os.path.join(out, name + ".ppm"), picture(w, h, i))
    fps, seconds, w, h = 30, 5, 1280, 720
    base = picture(w + 300, h, 5)
    frames = np.stack([base[:, 2 * k:2 * k + w] for k in range(fps * seconds)])  # a slow pan
    write_y4m(os.path.join(out, "clip.y4m"), frames, fps)
    t = np.arange(48000 * seconds) / 48000.0
    write_wav(os.path.join(out, "clip.wav"), np.stack([0.3 * np.sin(2 * np.pi * 440 * t),
                                                       0.3 * np.sin(2 * np.pi * 554 * t)]), 48000)
    t = np.arange(44100 * 4) / 44100.0
    write_wav(os.path.join(out, "voice.wav"), (0.3 * np.sin(2 * np.pi * 220 * t * (1 + 0.1 * t)))[None], 44100)
    print(out + ": wide.ppm square.ppm tall.ppm landscape.ppm clip.y4m (+ clip.wav) voice.wav")


if __name__ == "__main__":
    main()
