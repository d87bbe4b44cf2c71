#!/usr/bin/env python3
"""A stand-in for the `ffmpeg` program on the GPU machine, which has no FFmpeg, built on PyAV (its wheel
bundles FFmpeg's libraries with libx264 and the native AAC encoder). It accepts exactly the command line
Orochi's MP4 fallback (src/io/mp4_program.cpp) passes:

    ffmpeg -nostdin -y -loglevel error -i video.y4m [-i audio.wav] -map 0:v:0 -c:v libx264 -crf N -preset P
           -pix_fmt yuv420p [-map 1:a:0 -c:a aac -b:a BITS] -movflags +faststart out.mp4

and writes the same streams: H.264 yuv420p at the Y4M's frame rate, AAC at the WAV's rate and channels.
Use: OROCHI_FFMPEG=scripts/device/ffmpeg_pyav.py (with PyAV importable).
"""
import sys
from fractions import Fraction

import av


def parse(argv):
    opts = {"inputs": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-i":
            opts["inputs"].append(argv[i + 1]); i += 2
        elif a in ("-crf", "-preset", "-b:a", "-pix_fmt", "-c:v", "-c:a", "-map", "-loglevel", "-movflags"):
            opts[a] = argv[i + 1]; i += 2
        elif a in ("-y", "-nostdin"):
            i += 1
        elif a.startswith("-"):
            sys.exit(f"ffmpeg_pyav: unsupported option {a}")
        else:
            opts["output"] = a; i += 1
    if not opts["inputs"] or "output" not in opts:
        sys.exit("ffmpeg_pyav: need -i inputs and an output path")
    return opts


def main():
    opts = parse(sys.argv[1:])
    video_in = av.open(opts["inputs"][0])
    audio_in = av.open(opts["inputs"][1]) if len(opts["inputs"]) > 1 else None
    vsrc = video_in.streams.video[0]
    rate = vsrc.average_rate or Fraction(24, 1)
    out = av.open(opts["output"], mode="w", format="mp4", options={"movflags": "+faststart"})
    vst = out.add_stream(opts.get("-c:v", "libx264"), rate=rate)
    vst.width, vst.height = vsrc.codec_context.width, vsrc.codec_context.height
    vst.pix_fmt = opts.get("-pix_fmt", "yuv420p")
    vst.options = {"crf": opts.get("-crf", "18"), "preset": opts.get("-preset", "medium")}
    ast = resampler = None
    if audio_in is not None:
        asrc = audio_in.streams.audio[0]
        # A WAV's layout is "N channels" (no order); the encoder wants a named one.
        layout = {1: "mono", 2: "stereo"}[asrc.codec_context.channels]
        ast = out.add_stream(opts.get("-c:a", "aac"), rate=asrc.rate, layout=layout)
        ast.bit_rate = int(opts.get("-b:a", "192000"))
        ast.codec_context.open()  # fixes frame_size (1024 for AAC): the encoder takes whole frames only
        resampler = av.AudioResampler(format="fltp", layout=layout, rate=asrc.rate,
                                      frame_size=ast.codec_context.frame_size)
    for n, frame in enumerate(video_in.decode(video=0)):
        frame = frame.reformat(format=vst.pix_fmt)
        frame.pts, frame.time_base = n, Fraction(1, 1) / rate
        out.mux(vst.encode(frame))
    out.mux(vst.encode(None))
    if audio_in is not None:
        for frame in audio_in.decode(audio=0):
            frame.pts = None
            for f in resampler.resample(frame):
                out.mux(ast.encode(f))
        for f in resampler.resample(None):
            out.mux(ast.encode(f))
        out.mux(ast.encode(None))
    out.close()


if __name__ == "__main__":
    main()
