#!/usr/bin/env python3
"""diffusers' time for each preprocessing part of issue 23's ref2va request, on the device (the peer side of
scripts/device/run_ref2va_gpu.sh's stage report: media decode, VAE encode, vision+text).

The request is run_ref2va_gpu.sh's: 832x480x124, in this order 4 pictures (wide, square, tall, landscape: 3648x2048,
2048x2048, 2048x2720, 3072x2048 at the 2048 rule), a 5 s 1280x720 30 fps video with its 48 kHz stereo soundtrack
(clip.y4m + clip.wav), a 4 s 44.1 kHz mono clip (voice.wav), as scripts/device/make_ref2va_media.py makes them.

It runs diffusers 0.42.1's own ref2va blocks (modular_pipelines/minimax_h3) on that media, each timed with CUDA
synchronisation (one warm-up request, then the median of --iters):
  decode       the references' from_file (references.py): load_image (PIL open, EXIF transpose, RGB) for the
               pictures; PyAV for the Y4M and the WAVs when it is importable (--decoder auto), else a numpy Y4M/WAV
               reader that hands the pipeline the same in-memory media (uint8 RGB frames + fps, float32 [C, n]
               waveform + rate); that leaves out PyAV's demux, its YUV->RGB24 swscale and its fltp conversion;
  normalize    MiniMaxH3Ref2VASetupStep: pictures to their 2048 short edge (PIL LANCZOS), the video to 24 fps
               (frame slots), truncated and LANCZOS-resized to its own 1344x768 canvas frame by frame, the
               soundtrack and the clip truncated and resampled to 32 kHz (torchaudio);
  media_decode = decode + normalize;
  video_vae    (= video_vae_images + video_vae_video) the image and video references through
               encode_vae_condition: fp32 encoder (TF32 convolutions, torch's default, which the pipeline keeps),
               256-pixel tiles, the video's 107 frames in 17-frame clips, the seed-42 CPU posterior draw, the fp16
               round, the normalisation;
  audio_vae    the soundtrack and the clip through the audio VAE (fp32), mean, normalised rows;
  vae_encode   = MiniMaxH3Ref2VAReferenceEncoderStep = video_vae + audio_vae;
  processor    MiniMaxH3Ref2VATextEncoderStep up to the conditioner: Qwen3-VL's image processor over the 4
               pictures, the video's 2 fps frames through its video processor (both on the CPU, as the pipeline
               calls them), the presentation tokenized segment by segment;
  vision_tower the Qwen3-VL vision tower (bf16) over the pictures and the video blocks;
  text_stack   the rest of get_qwen3vl_prompt_embeds: ids, token types and pixels to the GPU (bf16), the embedding,
               the first 50 decoder layers of the 32B stack (bf16, sdpa) with every hidden state kept;
  vision_text  = processor + vision_tower + text_stack (ours: "text" in the stage report);
  total        = media_decode + vae_encode + vision_text.
The pipeline as shipped runs all 64 decoder layers and reads hidden_states[50]; vision_text_64_layers and
total_64_layers are that (one 64-layer stack is built and the 50-layer runs use its first 50 layers;
--no-shipped-depth builds 50 and skips it).

Models: random weights of the released shapes on the GPU (the video VAE encoder, the audio VAE, Qwen3-VL's vision
tower + 32B stack), built by the device comparisons' own builders (compare_h3_video_vae_encoder.build_encoder_vae,
compare_h3_audio_vae_encoder.build_encoder_vae, compare_qwen3vl_presentation.build_model with a fast normal fill;
weights do not change the time). The component values the blocks read (fps, canvas multiple, chunking, rates, pixel
convention, seed, tags, layer 50) are MiniMaxH3ModularPipeline's own properties, the canvas configs the setup step's
defaults. Model building is not timed (the pipeline loads once). The tokenizer is the repository's test BPE
(tests/data/tokenizer/qwen_bpe), not the release's: the vision blocks' token counts are the same, the label and
prompt text a few tokens different; the vision-token ids are mapped onto the model's config.

Prints `PEER_PREP <part> <seconds>` lines (medians), `PEER_PREP_ITER` lines (every timed request), the sizes
(`PEER_PREP_SIZES`), one JSON line, also written to $OUT/peer_ref2va_preprocess.json when OUT is set.

Usage (device, through peer_ref2va_preprocess.sh): python3 scripts/device/peer_ref2va_preprocess.py --media DIR
CPU check of the whole flow at tiny sizes (its own small media, narrow models, fp32 VAEs, bf16 Qwen):
    python3 scripts/device/peer_ref2va_preprocess.py --tiny
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import wave
from types import SimpleNamespace

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

TOKENIZER = os.path.join(ROOT, "tests", "data", "tokenizer", "qwen_bpe", "tokenizer.json")
PICTURES = ("wide", "square", "tall", "landscape")  # run_ref2va_gpu.sh's --ref-image order
PROMPT = ("The woman from picture 1 and the man from picture 2 walk through the hall of picture 3 towards the "
          "window of picture 4, the camera moving as in video 1 with its sound, while the voice of audio 2 speaks.")
SHIPPED_LAYERS = 64  # the released Qwen3-VL text stack; H3 reads hidden_states[50]
QWEN_SEED = 7

# Release processor settings (REF2VA.md §4.1: processor/{preprocessor,video_preprocessor}_config.json).
PROCESSOR_COMMON = dict(patch_size=16, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
IMAGE_SIZE = {"shortest_edge": 65536, "longest_edge": 16777216}
VIDEO_SIZE = {"shortest_edge": 4096, "longest_edge": 25165824}

# --tiny: narrow models and a small canvas, so the same flow runs on a CPU in seconds.
TINY_VIDEO_VAE = dict(block_out_channels=(8, 8, 8, 16, 16, 16), norm_num_groups=4, decoder_num_attention_heads=2,
                      decoder_attention_head_dim=8)
TINY_AUDIO_VAE = dict(encoder_dim=4, latent_dim=64, decoder_dim=256)
TINY_CANVAS = dict(canvas_short_edge=64, canvas_max_pixels=64 * 112, reference_image_short_edge=64)
TINY_TEXT_LAYER = 2  # the tiny stack's "layer 50"; shipped depth 3


def log(msg):
    print(f"[peer_ref2va_preprocess] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------------------
# Media


def make_tiny_media(out_dir):
    """Small files of the same kinds and order as make_ref2va_media.py's, with its writers."""
    from make_ref2va_media import picture, write_ppm, write_wav, write_y4m
    for i, (name, w, h) in enumerate([("wide", 96, 54), ("square", 64, 64), ("tall", 48, 64), ("landscape", 72, 48)]):
        write_ppm(os.path.join(out_dir, name + ".ppm"), picture(w, h, i))
    fps, seconds, w, h = 30, 5, 128, 72
    base = picture(w + 300, h, 5)
    frames = np.stack([base[:, 2 * k:2 * k + w] for k in range(fps * seconds)])  # a slow pan
    write_y4m(os.path.join(out_dir, "clip.y4m"), frames, fps)
    t = np.arange(48000 * seconds) / 48000.0
    write_wav(os.path.join(out_dir, "clip.wav"), np.stack([0.3 * np.sin(2 * np.pi * 440 * t),
                                                           0.3 * np.sin(2 * np.pi * 554 * t)]), 48000)
    t = np.arange(44100 * 4) / 44100.0
    write_wav(os.path.join(out_dir, "voice.wav"), (0.3 * np.sin(2 * np.pi * 220 * t))[None], 44100)


def read_y4m_rgb(path):
    """(uint8 [N, H, W, 3] RGB, fps) of a 4:4:4 BT.601 limited-range Y4M (make_ref2va_media.py's): what PyAV's
    rgb24 frames are, computed with numpy (within rounding of swscale's fixed-point conversion)."""
    with open(path, "rb") as f:
        header = f.readline().split()
        data = f.read()
    if header[0] != b"YUV4MPEG2":
        raise SystemExit(f"{path}: not a Y4M file")
    fields = {t[:1]: t[1:] for t in header[1:]}
    w, h = int(fields[b"W"]), int(fields[b"H"])
    num, den = (int(x) for x in fields[b"F"].split(b":"))
    if fields.get(b"C", b"420")[:3] != b"444":
        raise SystemExit(f"{path}: the numpy reader takes 4:4:4 Y4M only (make_ref2va_media.py's); "
                         "carry PyAV (.whl-av) for others")
    frame_bytes = len(b"FRAME\n") + 3 * w * h
    count = len(data) // frame_bytes
    planes = np.frombuffer(data, np.uint8, count * frame_bytes).reshape(count, frame_bytes)[:, 6:]
    planes = planes.reshape(count, 3, h, w)  # Y, Cb, Cr planes per frame
    frames = np.empty((count, h, w, 3), np.uint8)
    for i in range(count):  # frame by frame, as a decoder hands them over
        y, cb, cr = (planes[i, c].astype(np.float32) for c in range(3))
        y = (y - 16.0) * (255.0 / 219.0)
        cb, cr = (cb - 128.0) * (255.0 / 224.0), (cr - 128.0) * (255.0 / 224.0)
        rgb = np.stack([y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb], axis=-1)
        frames[i] = np.clip(np.rint(rgb), 0, 255)
    return frames, num / den


def read_wav(path):
    """(float32 [C, n] in [-1, 1), rate) of a 16-bit PCM WAV: PyAV's fltp conversion of s16 (x / 32768)."""
    with wave.open(path, "rb") as f:
        if f.getsampwidth() != 2:
            raise SystemExit(f"{path}: the numpy reader takes 16-bit PCM only")
        channels, rate, raw = f.getnchannels(), f.getframerate(), f.readframes(f.getnframes())
    pcm = np.frombuffer(raw, "<i2").reshape(-1, channels).T
    return torch.from_numpy(pcm.astype(np.float32) / 32768.0), rate


def decode_references(media, use_av):
    """The request's references as the pipeline takes them, decoded by its own from_file where it can."""
    from diffusers.modular_pipelines.minimax_h3.references import (MiniMaxH3AudioReference, MiniMaxH3ImageReference,
                                                                   MiniMaxH3VideoReference)
    refs = [MiniMaxH3ImageReference.from_file(os.path.join(media, name + ".ppm")) for name in PICTURES]
    clip, sound, voice = (os.path.join(media, n) for n in ("clip.y4m", "clip.wav", "voice.wav"))
    if use_av:
        video = MiniMaxH3VideoReference.from_file(clip)  # a Y4M has no sound: clip.wav is its soundtrack
        soundtrack = MiniMaxH3AudioReference.from_file(sound)
        refs.append(MiniMaxH3VideoReference(frames=video.frames, fps=video.fps, audio=soundtrack.audio,
                                            sample_rate=soundtrack.sample_rate))
        refs.append(MiniMaxH3AudioReference.from_file(voice))
    else:
        frames, fps = read_y4m_rgb(clip)
        audio, rate = read_wav(sound)
        refs.append(MiniMaxH3VideoReference(frames=frames, fps=fps, audio=audio, sample_rate=rate))
        audio, rate = read_wav(voice)
        refs.append(MiniMaxH3AudioReference(audio=audio, sample_rate=rate))
    return refs


# ---------------------------------------------------------------------------------------------------------------------
# Components


def fast_fill(tensor, seed, stream, mean, std):
    """build_model's fill for timing: N(mean, std) from torch's generator on the tensor's device."""
    gen = torch.Generator(device=tensor.device).manual_seed(seed * 1_000_003 + stream)
    tensor.normal_(mean, std, generator=gen)


class Conditioner:
    """What get_qwen3vl_prompt_embeds reads of the pipeline's Qwen3VLForConditionalGeneration: .model (the built
    Qwen3VLModel), .dtype and the shipped depth (it refuses a stack that does not go past the layer it reads)."""

    def __init__(self, model, shipped_layers):
        self.model = model
        self.dtype = next(model.parameters()).dtype
        self.config = SimpleNamespace(text_config=SimpleNamespace(num_hidden_layers=shipped_layers))
        self.all_layers = list(model.language_model.layers)

    def set_depth(self, layers):
        lm = self.model.language_model
        lm.layers = torch.nn.ModuleList(self.all_layers[:layers])
        lm.config.num_hidden_layers = layers  # some transformers versions slice self.layers by it


def pipeline_facts_class(text_encoder_layer):
    """A class holding MiniMaxH3ModularPipeline's own properties (read over the components set on an instance), with
    the layer the conditioner is read at (50 in the release)."""
    from diffusers.modular_pipelines.minimax_h3.modular_pipeline import MiniMaxH3ModularPipeline
    props = {n: a for n, a in vars(MiniMaxH3ModularPipeline).items() if isinstance(a, property)}
    if text_encoder_layer != props["text_encoder_layer"].fget(None):
        props["text_encoder_layer"] = text_encoder_layer
    return type("PipelineFacts", (), props)


def build_components(args, device):
    from diffusers.image_processor import VaeImageProcessor
    from diffusers.modular_pipelines.minimax_h3.before_encoder import MiniMaxH3Ref2VASetupStep
    from transformers import Qwen2TokenizerFast, Qwen2VLImageProcessorFast, Qwen3VLProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    from compare_h3_audio_vae_encoder import SEED as AUDIO_SEED
    from compare_h3_audio_vae_encoder import build_encoder_vae as build_audio_vae
    from compare_h3_video_vae_encoder import build_encoder_vae as build_video_vae
    from compare_qwen3vl_full import QWEN3VL_32B, TINY
    from compare_qwen3vl_presentation import VISION_32B, build_model

    t0 = time.perf_counter()
    video_vae = build_video_vae(**(TINY_VIDEO_VAE if args.tiny else {})).to(device)
    audio_vae = build_audio_vae(torch.Generator().manual_seed(AUDIO_SEED), **(TINY_AUDIO_VAE if args.tiny else {}))
    audio_vae = audio_vae.to(device)
    log(f"VAEs built in {time.perf_counter() - t0:.1f} s")

    if args.tiny:
        text = dict(TINY, vocab_size=4096)
        vision = dict(VISION_32B, depth=2, hidden_size=32, intermediate_size=64, num_heads=2,
                      out_hidden_size=text["hidden_size"], deepstack_visual_indexes=[0, 1])
        layer, shipped = TINY_TEXT_LAYER, TINY_TEXT_LAYER + 1
        image_size = {"shortest_edge": 4096, "longest_edge": IMAGE_SIZE["longest_edge"]}
    else:
        text, vision, layer, shipped, image_size = QWEN3VL_32B, VISION_32B, 50, SHIPPED_LAYERS, IMAGE_SIZE
    built = shipped if args.shipped_depth else layer
    model = build_model(text, vision, built, torch.bfloat16, device, QWEN_SEED, "sdpa", fill=fast_fill)
    tokenizer = Qwen2TokenizerFast(tokenizer_file=TOKENIZER)
    for key, token in (("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
                       ("vision_start_token_id", "<|vision_start|>"), ("vision_end_token_id", "<|vision_end|>")):
        setattr(model.config, key, tokenizer.convert_tokens_to_ids(token))  # the test tokenizer's ids
    conditioner = Conditioner(model, shipped)
    conditioner.set_depth(layer)
    processor = Qwen3VLProcessor(image_processor=Qwen2VLImageProcessorFast(size=image_size, **PROCESSOR_COMMON),
                                 tokenizer=tokenizer,
                                 video_processor=Qwen3VLVideoProcessor(size=VIDEO_SIZE, **PROCESSOR_COMMON))

    c = pipeline_facts_class(layer)()
    c.vae, c.audio_vae, c.text_encoder = video_vae, audio_vae, conditioner
    c.tokenizer, c.processor = tokenizer, processor
    c.image_processor = VaeImageProcessor(vae_scale_factor=16)  # the setup step's ComponentSpec
    c._execution_device = torch.device(device)
    c.config = SimpleNamespace(**{s.name: s.default for s in MiniMaxH3Ref2VASetupStep().expected_configs})
    if args.tiny:
        vars(c.config).update(TINY_CANVAS)
    return c, dict(layer=layer, shipped=shipped, built=built)


# ---------------------------------------------------------------------------------------------------------------------
# Timing


class Clock:
    """Seconds with the device drained at both ends."""

    def __init__(self, device):
        self.cuda = str(device).startswith("cuda")

    def now(self):
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()


class Timed:
    """A function of the blocks' module replaced by itself plus a synchronised clock: calls holds (what(args),
    seconds) per call since the last reset (what: a small summary of the arguments, not the tensors)."""

    def __init__(self, module, name, clock, what=lambda args: None):
        self.clock, self.what, self.original = clock, what, getattr(module, name)
        self.calls = []
        setattr(module, name, self)

    def reset(self):
        self.calls = []

    def seconds(self, key=lambda w: True):
        return sum(s for w, s in self.calls if key(w))

    def __call__(self, *args, **kwargs):
        t = self.clock.now()
        out = self.original(*args, **kwargs)
        self.calls.append((self.what(args), self.clock.now() - t))
        return out


def vae_call_kind(args):
    """encode_vae_condition(vae, pixels [1, 3, F, H, W], ...): an image (F = 1) or a video."""
    return "image" if args[1].shape[2] == 1 else "video"


def conditioner_call_sizes(args):
    """get_qwen3vl_prompt_embeds(text_encoder, processor, token_ids, vision_inputs, ...): tokens and grids."""
    vision = args[3] or {}
    grids = {k: vision[k].tolist() for k in ("image_grid_thw", "video_grid_thw") if k in vision}
    return dict(tokens=len(args[2]), **grids)


class ModuleTimer:
    """Synchronised time spent inside one nn.Module's forward (accumulating over calls)."""

    def __init__(self, module, clock):
        self.seconds, self.clock, self.start = 0.0, clock, None
        module.register_forward_pre_hook(lambda m, a: setattr(self, "start", self.clock.now()))
        module.register_forward_hook(lambda m, a, o: self._stop())

    def _stop(self):
        self.seconds += self.clock.now() - self.start


def run_request(c, args, clock, timers, with_media=True, state=None):
    """One ref2va preprocessing through the pipeline's blocks; returns (seconds per part, the final state)."""
    from diffusers.modular_pipelines import PipelineState
    from diffusers.modular_pipelines.minimax_h3.before_encoder import MiniMaxH3Ref2VASetupStep
    from diffusers.modular_pipelines.minimax_h3.encoders import (MiniMaxH3Ref2VAReferenceEncoderStep,
                                                                 MiniMaxH3Ref2VATextEncoderStep)
    vae_calls, conditioner_calls, tower = timers
    t = {}
    if with_media:
        t0 = clock.now()
        refs = decode_references(args.media, args.use_av)
        t1 = clock.now()
        state = PipelineState()
        for key, value in (("references", refs), ("height", args.height), ("width", args.width),
                           ("num_frames", args.frames), ("prompt", args.prompt)):
            state.set(key, value)
        MiniMaxH3Ref2VASetupStep()(c, state)
        t2 = clock.now()
        vae_calls.reset()
        MiniMaxH3Ref2VAReferenceEncoderStep()(c, state)
        t3 = clock.now()
        video_vae = vae_calls.seconds()
        t.update(decode=t1 - t0, normalize=t2 - t1, media_decode=t2 - t0,
                 video_vae_images=vae_calls.seconds(lambda w: w == "image"),
                 video_vae_video=vae_calls.seconds(lambda w: w == "video"), video_vae=video_vae,
                 audio_vae=t3 - t2 - video_vae, vae_encode=t3 - t2)
    conditioner_calls.reset()
    tower.seconds = 0.0
    t3 = clock.now()
    MiniMaxH3Ref2VATextEncoderStep()(c, state)
    t4 = clock.now()
    conditioner = conditioner_calls.seconds()
    t.update(processor=t4 - t3 - conditioner, vision_tower=tower.seconds, text_stack=conditioner - tower.seconds,
             vision_text=t4 - t3)
    if with_media:
        t["total"] = t["media_decode"] + t["vae_encode"] + t["vision_text"]
    return t, state


def sizes_of(state, conditioner_calls):
    """What the request came to: the normalized references (W x H), the latents,
    the audio rows, the presentation's tokens and vision grids."""
    shape = {"image": lambda r: "image {}x{}".format(*r.image.size),
             "video": lambda r: f"video {len(r.frames)} frames {r.frames.shape[2]}x{r.frames.shape[1]} + sound "
                                f"{tuple(r.audio.shape)}",
             "audio": lambda r: f"audio {tuple(r.audio.shape)}"}
    return dict(normalized=[shape[r.kind](r) for r in state.get("normalized_references")],
                condition_latents=[list(x.shape) for x in state.get("condition_latents")],
                audio_rows=[int(x.shape[0]) for x in state.get("audio_condition_latents")],
                prompt_embeds=list(state.get("prompt_embeds").shape), **conditioner_calls.calls[-1][0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--media", help="make_ref2va_media.py's folder (default: made in a temporary folder)")
    ap.add_argument("--tiny", action="store_true", help="CPU check at tiny sizes (own media, narrow models)")
    ap.add_argument("--iters", type=int, default=2, help="timed requests after one warm-up (median reported)")
    ap.add_argument("--decoder", choices=("auto", "pyav", "numpy"), default="auto",
                    help="PyAV (the pipeline's from_file) for the Y4M/WAVs, or the numpy readers; "
                         "auto: PyAV if importable")
    ap.add_argument("--no-shipped-depth", dest="shipped_depth", action="store_false",
                    help="skip the 64-layer conditioner the pipeline runs as shipped")
    ap.add_argument("--width", type=int, default=832)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--frames", type=int, default=124)
    ap.add_argument("--prompt", default=PROMPT)
    ap.add_argument("--device", default=None, help="default cuda (cpu with --tiny)")
    args = ap.parse_args()
    device = args.device or ("cpu" if args.tiny else "cuda")
    from diffusers.utils import is_av_available
    args.use_av = args.decoder == "pyav" or (args.decoder == "auto" and is_av_available())
    if args.decoder == "pyav" and not is_av_available():
        raise SystemExit("--decoder pyav: PyAV is not importable (carry .whl-av)")
    if args.iters < 1:
        raise SystemExit("--iters must be at least 1")
    tmp = None
    if args.media is None:
        tmp = tempfile.TemporaryDirectory(prefix="peer_ref2va_media_")
        args.media = tmp.name
        if args.tiny:
            make_tiny_media(args.media)
        else:
            from make_ref2va_media import main as make_media
            sys.argv = ["make_ref2va_media.py", args.media]
            make_media()
    missing = [n for n in [p + ".ppm" for p in PICTURES] + ["clip.y4m", "clip.wav", "voice.wav"]
               if not os.path.isfile(os.path.join(args.media, n))]
    if missing:
        raise SystemExit(f"{args.media} lacks {missing}: make it with scripts/device/make_ref2va_media.py DIR")

    import diffusers
    import transformers
    from diffusers.modular_pipelines.minimax_h3 import encoders
    if str(device).startswith("cuda"):
        log(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, diffusers {diffusers.__version__}, "
            f"transformers {transformers.__version__}; cudnn.allow_tf32 {torch.backends.cudnn.allow_tf32}, "
            f"matmul.allow_tf32 {torch.backends.cuda.matmul.allow_tf32} (torch's defaults, as the pipeline runs)")
    t_build = time.perf_counter()
    c, depth = build_components(args, device)
    log(f"components built in {time.perf_counter() - t_build:.1f} s (not timed): conditioner read at layer "
        f"{depth['layer']}, {depth['built']} layers built")
    clock = Clock(device)
    timers = (Timed(encoders, "encode_vae_condition", clock, vae_call_kind),
              Timed(encoders, "get_qwen3vl_prompt_embeds", clock, conditioner_call_sizes),
              ModuleTimer(c.text_encoder.model.visual, clock))
    decoder = ("pyav (the pipeline's from_file)" if args.use_av
               else "numpy Y4M/WAV readers (PyAV's demux and conversion left out)")
    print(f"PEER_PREP_DECODER {decoder}", flush=True)

    # Warm-up at the largest depth, so the 50-layer and 64-layer runs after it find the allocator grown.
    c.text_encoder.set_depth(depth["built"])
    t0 = time.perf_counter()
    _, state = run_request(c, args, clock, timers)
    log(f"warm-up request {time.perf_counter() - t0:.1f} s")
    sizes = sizes_of(state, timers[1])
    print("PEER_PREP_SIZES " + json.dumps(sizes), flush=True)
    runs, shipped_runs = [], []
    for i in range(args.iters):
        c.text_encoder.set_depth(depth["layer"])
        t, state = run_request(c, args, clock, timers)
        runs.append(t)
        print(f"PEER_PREP_ITER {i} " + " ".join(f"{k}={v:.3f}" for k, v in t.items()), flush=True)
        if args.shipped_depth:
            c.text_encoder.set_depth(depth["shipped"])
            s, _ = run_request(c, args, clock, timers, with_media=False, state=state)
            shipped_runs.append(s)
            print(f"PEER_PREP_ITER {i} {depth['shipped']}-layer " + " ".join(f"{k}={v:.3f}" for k, v in s.items()),
                  flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    if shipped_runs:
        for k in ("vision_tower", "text_stack", "vision_text"):
            med[f"{k}_{depth['shipped']}_layers"] = statistics.median(r[k] for r in shipped_runs)
        med[f"total_{depth['shipped']}_layers"] = med["media_decode"] + med["vae_encode"] + med[
            f"vision_text_{depth['shipped']}_layers"]
    for k, v in med.items():
        print(f"PEER_PREP {k} {v:.3f}", flush=True)
    res = dict(check="peer_ref2va_preprocess", tiny=args.tiny, device=str(device), iters=args.iters,
               decoder=decoder, request=dict(width=args.width, height=args.height, frames=args.frames,
                                             media=args.media, prompt_chars=len(args.prompt)),
               conditioner_layer=depth["layer"], shipped_layers=depth["shipped"], sizes=sizes, median_s=med,
               runs=runs, shipped_runs=shipped_runs, torch=torch.__version__, diffusers=diffusers.__version__,
               transformers=transformers.__version__,
               gpu=torch.cuda.get_device_name() if str(device).startswith("cuda") else None,
               peak_gpu_gib=torch.cuda.max_memory_allocated() / 2**30 if str(device).startswith("cuda") else None)
    print(json.dumps(res), flush=True)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "peer_ref2va_preprocess.json"), "w") as fh:
            json.dump(res, fh, indent=1)
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
