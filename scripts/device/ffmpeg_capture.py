#!/usr/bin/env python3
"""A stand-in for the `ffmpeg` program that keeps Orochi's lossless output instead of encoding it.

A build without FFmpeg's libraries (the GPU machine's) writes the frames as a Y4M (8-bit 4:4:4, BT.601
limited range) and the sound as a 16-bit WAV, then runs $OROCHI_FFMPEG with exactly the command line
src/io/mp4_program.cpp passes:

    ffmpeg -nostdin -y -loglevel error -i video.y4m [-i audio.wav] -map 0:v:0 ... out.mp4

This program moves those two files into $FFMPEG_CAPTURE_DIR as video.y4m and audio.wav (before
Orochi removes its scratch folder), so runs can be compared sample for sample with no codec between
them; the "MP4" it leaves at out.mp4 is a one-line text file saying where the frames went.
Use: OROCHI_FFMPEG=scripts/device/ffmpeg_capture.py FFMPEG_CAPTURE_DIR=DIR orochi generate ...
(not OROCHI_*: orochi refuses unknown OROCHI_ variables as typos; stdlib only).
"""
import os
import shutil
import sys


def parse(argv):
    inputs, output = [], None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-i":
            inputs.append(argv[i + 1]); i += 2
        elif a in ("-crf", "-preset", "-b:a", "-pix_fmt", "-c:v", "-c:a", "-map", "-loglevel", "-movflags"):
            i += 2
        elif a in ("-y", "-nostdin"):
            i += 1
        elif a.startswith("-"):
            sys.exit(f"ffmpeg_capture: unsupported option {a}")
        else:
            output = a; i += 1
    if not inputs or output is None:
        sys.exit("ffmpeg_capture: need -i inputs and an output path")
    return inputs, output


def keep(src, dst):
    """Moves src to dst (a rename on one file system, else a copy): the caller deletes src next."""
    try:
        os.replace(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def main():
    inputs, output = parse(sys.argv[1:])
    target = os.environ.get("FFMPEG_CAPTURE_DIR", "")
    if not target or not os.path.isdir(target):
        sys.exit("ffmpeg_capture: set FFMPEG_CAPTURE_DIR to an existing folder (got %r)" % target)
    names = {".y4m": "video.y4m", ".wav": "audio.wav"}
    for path in inputs:
        ext = os.path.splitext(path)[1].lower()
        if ext not in names:
            sys.exit(f"ffmpeg_capture: input {path} is neither .y4m nor .wav")
        keep(path, os.path.join(target, names[ext]))
    with open(output, "w") as f:
        f.write(f"not an MP4: ffmpeg_capture.py kept the frames and sound in {target}\n")


if __name__ == "__main__":
    main()
