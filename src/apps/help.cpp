#include "apps/help.h"

#include "apps/request_limits.h"
#include "engine/run_switches.h"

namespace orochi::apps {
namespace {

// The request limits, spelled once for every command that takes a canvas and frames.
#define OROCHI_CANVAS_LIMITS "multiples of 32 px, 32 to 8192 per side"
#define OROCHI_FRAMES_LIMITS "17n + 5 frames at 24 fps, 5 to 17005"
#define OROCHI_SEED_LIMITS "0 to 18446744073709551615 (2^64 - 1)"
#define OROCHI_TEXT_ROWS_LIMITS "1 to 65536"
#define OROCHI_STEPS_LIMITS "1 to 1000"
static_assert(limits::kCanvasMinSide == 32 && limits::kCanvasMaxSide == 8192 && limits::kCanvasMultiple == 32);
static_assert(limits::kFramesMin == 5 && limits::kFramesMax == 17005);
static_assert(limits::kTextRowsMin == 1 && limits::kTextRowsMax == 65536);
static_assert(limits::kStepsMin == 1 && limits::kStepsMax == 1000);

constexpr const char* kGenerateHelp =
    "usage: orochi generate [MODEL_DIR] [options]\n"
    "  text to video with audio: an MP4 (H.264 + stereo AAC) and its stage report (JSON) beside it\n"
    "  MODEL_DIR              a diffusers-layout MiniMax-H3 folder (transformer/, vae/, audio_vae/), or\n"
    "                         the original release's root (FL2VA/ + Ref2VA/) or either folder;\n"
    "                         without it: the built-in tiny demo model (random weights, CPU)\n"
    "  --prompt TEXT          the prompt, through MODEL_DIR's tokenizer/ and text_encoder/ (Qwen3-VL, the\n"
    "                         residual after layer --text-layer, default 50), on --device\n"
    "  --text-layer N         the text encoder layer whose residual conditions the denoiser (default 50;\n"
    "                         1 to the encoder's layer count)\n"
    "  --text-features FILE   instead of --prompt: safetensors with prompt_embeds [L, 5120]; the demo\n"
    "                         uses random features\n"
    "  --width W --height H   canvas, " OROCHI_CANVAS_LIMITS " (demo 320x192, checkpoint\n"
    "                         1344x768)\n"
    "  --frames F             " OROCHI_FRAMES_LIMITS " (default 124 = 5.2 s)\n"
    "  --steps N              denoiser evaluations, " OROCHI_STEPS_LIMITS " (demo 8, checkpoint 20)\n"
    "  --seed S               noise seed, " OROCHI_SEED_LIMITS " (default 0); the same seed\n"
    "                         gives the same video on any device\n"
    "  --video-shift X --audio-shift Y   schedule shifts, finite numbers > 0 (default 12 and 3, the\n"
    "                         release's)\n"
    "  --preset NAME          few-step schedule as the turbo LoRA cards state, with no --steps, shift or\n"
    "                         sigma list beside it: turbo8 (8 evaluations on the q_i = (8 - i)/8 grid,\n"
    "                         shifts 6/3: lightx2v's 8-step 768p LoRA), turbo4 (4 evaluations, shifts\n"
    "                         6/3: the 4-step v1.1 768p LoRA); the 544p turbo LoRAs use the default\n"
    "                         shifts: --steps 8 or 4 alone\n"
    "  --sigmas LIST          the video sigma grid as given, comma-separated, 1 first, strictly\n"
    "                         decreasing, 0 last: N evaluations take N + 1 values (sets --steps; with\n"
    "                         --steps they must agree); e.g. HyperFlow's 8-step grid\n"
    "                         1,0.99391,0.98429,0.96606,0.92308,0.83494,0.69685,0.46875,0\n"
    "  --audio-sigmas LIST    the audio grid the same way (as many values as --sigmas); without it the\n"
    "                         audio takes its shifted grid of the same step count\n"
    "  --out PATH             the MP4 to write (default output.mp4): a file in an existing, writable\n"
    "                         folder, not a folder, device or FIFO; the stage report goes beside it with\n"
    "                         .json for the extension (so PATH must not end in .json). Both are checked\n"
    "                         before any work, written under temporary names and renamed into place\n"
    "                         (the report after the video, an old report removed first); Ctrl-C removes\n"
    "                         the temporary files\n"
    "  --crf Q                H.264 quality 0 to 51 (default 18)\n"
    "  --device D             cpu, cuda or cuda:N (default: cpu for the demo, cuda:0 for a checkpoint when\n"
    "                         this build and machine have a GPU)\n"
    "  --gpus N               the denoiser on N GPUs from --device on, 1 to 64, every GPU on this video\n"
    "                         (default 1); the decoders run on the first\n"
    "  --parallel MODE        how N GPUs share it: auto (the planner decides: sequence parallel when the\n"
    "                         model fits on each GPU, else the least tensor parallel that fits), none,\n"
    "                         tpN (tensor parallel), spN (sequence parallel) or tpNxspM (both)\n"
    "  --comm-timeout S       seconds (>= 1) any GPU-to-GPU exchange may take before the run stops with an\n"
    "                         error naming the rank (default 60)\n"
    "  --set NAME=VALUE[,NAME=VALUE...]   run switches (those the OROCHI_* environment variables set;\n"
    "                         the command line wins); an unknown name or value is refused with the valid\n"
    "                         ones, and the report records them\n"
    "  --precision P          the denoiser's linears: bf16 (default, as released), or fp8 / int8 on one GPU:\n"
    "                         the blocks' q/k/v/out/FFN weights quantized per output channel at load (about\n"
    "                         half their bytes), activations per token; the CPU path refuses them\n"
    "  --random-weights       the released shapes (33 B denoiser, 2.4 B video VAE, 151 M audio VAE) with\n"
    "                         random weights generated on the GPU: the full-size pipeline without a\n"
    "                         checkpoint, for benchmarks (needs --device cuda)\n"
    "  --transformer FILE     a single-file transformer as ComfyUI keeps it (original names under\n"
    "                         model.diffusion_model. or diffusion_model., or diffusers names; F8_E4M3 /\n"
    "                         F8_E5M2 with scale_weight or weight_scale, per tensor or per row, dequantized):\n"
    "                         replaces MODEL_DIR's transformer, or the demo's\n"
    "                         without MODEL_DIR (same latent channels); its config: --transformer-config\n"
    "                         FILE, else a config.json beside it, else the released MiniMax-H3 config\n"
    "  --qkv-order ORDER      the fused qkv rows of --transformer: auto (detected from the q/k/v blocks'\n"
    "                         scales, refused when ambiguous), interleaved (original release) or thirds\n"
    "                         (ComfyUI)\n"
    "  --lora FILE[:STRENGTH] a LoRA merged into the transformer (W += STRENGTH * alpha/rank * B*A, f32,\n"
    "                         before any upload; STRENGTH default 1); repeatable; diffusers, original/\n"
    "                         ComfyUI, DiffSynth and kohya/musubi formats; the report lists them\n"
    "  --vae FILE --audio-vae FILE --text-encoder FILE   single parts as ComfyUI keeps them (or diffusers\n"
    "                         component folders), replacing MODEL_DIR's or the demo's: the video VAE in\n"
    "                         the original or diffusers names, the audio VAE with or without its weight\n"
    "                         norm folded, Qwen3-VL under model./visual. (truncated files read up to\n"
    "                         --text-layer); each config from a config.json beside the file, else the\n"
    "                         released one, the latents' mean/std from the file when it has them\n"
    "  --tokenizer DIR        the tokenizer (a folder holding tokenizer.json) for --prompt, in place of\n"
    "                         MODEL_DIR/tokenizer (ComfyUI keeps none)\n"
    "  --comfy-models DIR     a ComfyUI models/ folder instead of MODEL_DIR: the transformer, both VAEs and\n"
    "                         the text encoder found in diffusion_models/ (unet/), vae/, text_encoders/\n"
    "                         (clip/) by their keys; several files of one part are refused (pick one with\n"
    "                         its option, which always wins)\n"
    "  --text-rows L          rows of random text features without --text-features / --prompt,\n"
    "                         " OROCHI_TEXT_ROWS_LIMITS " (demo 32, else 256; also the plan's estimate of a\n"
    "                         prompt's length)\n"
    "  references, in command-line order (fl2va, ref2va): checked from the files' headers before any weight\n"
    "  is read; both run on the built-in demo model, and on a checkpoint with --prompt (the pictures reach\n"
    "  Qwen3-VL through its vision tower; ref2va runs on MODEL_DIR's transformer_ref/ or Ref2VA/transformer)\n"
    "  --image FILE           fl2va: the first keyframe (PNG, JPEG, WebP; aspect 1:4..4:1); without --width\n"
    "                         and --height the canvas follows its aspect\n"
    "  --last-image FILE      fl2va: the last keyframe (one of each at most)\n"
    "  --ref-image FILE       ref2va: a character / object picture, repeatable, up to 9 (aspect 1:4..4:1)\n"
    "  --ref-video FILE       ref2va: a reference video, repeatable, up to 3, at least 22 frames at 24 fps\n"
    "                         (~1 s); its soundtrack joins as reference audio\n"
    "  --ref-video-audio on|off   whether the videos' soundtracks join (default on)\n"
    "  --ref-audio FILE       ref2va: an audio clip (mono or stereo), repeatable, up to 3; not alone\n"
    "  --ref-size 2048|match  image references at a 2048-px short edge (default, the reference pipeline's) or\n"
    "                         scaled to the target's area (ComfyUI's; videos not upscaled)\n"
    "                         12 references at most in all; with references --frames is 124..345 (5-15 s)\n"
    "  --json                 print the stage report as JSON on stdout\n"
    "  --quiet                no progress lines\n"
    "  --help, -h             this text\n";

constexpr const char* kPlanHelp =
    "usage: orochi plan [--model h3|PATH] [--res 768p|544p|480p|WxH] [--frames 124] [--steps 8] [--text-rows 256]\n"
    "                   [--preset turbo8|turbo4] [--sigmas LIST] [--audio-sigmas LIST] [--video-shift X]\n"
    "                   [--audio-shift Y]\n"
    "                   [--gpus 1] [--vram-per-gpu 139] [--parallel auto|none|tpN|spN|tpNxspM]\n"
    "                   [--tiers resident,peer,host] [--staging-slots 2] [--link nvlink|pcie]\n"
    "                   [--peer-gbps G] [--host-gbps G] [--tflops T] [--set NAME=VALUE,...] [--json]\n"
    "                   [--precision bf16|fp8|int8]\n"
    "                   [--image F] [--last-image F] [--ref-image F ...] [--ref-video F ...] [--ref-audio F ...]\n"
    "                   [--ref-video-audio on|off] [--ref-size 2048|match]\n"
    "  the memory plan of a request per GPU and phase, from configs alone (no weights loaded)\n"
    "  --model        'h3' (released configs, default), a diffusers-layout folder or the original release's\n"
    "                 (FL2VA/, Ref2VA/): only the configs of the transformer, both VAEs and text_encoder/ are read\n"
    "  --res          a named canvas or WxH, " OROCHI_CANVAS_LIMITS "\n"
    "  --frames       " OROCHI_FRAMES_LIMITS "\n"
    "  --steps        " OROCHI_STEPS_LIMITS "\n"
    "  --preset --sigmas --audio-sigmas --video-shift --audio-shift   the schedule as generate takes it\n"
    "                 (checked the same way); the plan prints it and counts its distinct timesteps\n"
    "  --text-rows    text rows of the request, " OROCHI_TEXT_ROWS_LIMITS "\n"
    "  --vram-per-gpu usable GiB per GPU (139 = an H200)\n"
    "  --precision    the denoiser's linears: bf16 (default), fp8 or int8: the blocks' q/k/v/out/FFN weights as\n"
    "                 1-byte codes + per-channel f32 scales, about half their bytes (generate runs them on one GPU)\n"
    "  --parallel     tpN: tensor parallel over N GPUs; spN: Ulysses sequence parallel; tpNxspM: both, on N x M\n"
    "                 GPUs; GPUs beyond them store weights; auto (default): the layout `generate --gpus N`\n"
    "                 takes; none: one GPU computes, the others only store weights\n"
    "  --tiers        where weights may live: resident (on the computing GPU), peer (another GPU), host (pinned RAM)\n"
    "  --set          the run switches that change memory, as generate takes them (sp-qkv, sp-weights: the\n"
    "                 largest SP share sets the rows; conditioner-precision: the text encoder's linears);\n"
    "                 `orochi help switches`\n"
    "  --image --last-image --ref-image --ref-video --ref-audio FILE, --ref-video-audio on|off,\n"
    "  --ref-size 2048|match   generate's reference flags: checked from the files' headers (no pixel\n"
    "                 read), listed in order and sized as the run sizes them; the plan adds a reference\n"
    "                 encode phase (the VAE encoders), the conditioner's L (labels + vision tokens +\n"
    "                 --text-rows) and the references' rows in S; fl2va's canvas from --image without\n"
    "                 --res; ref2va also prints the other --ref-size's rows and fit\n"
    "  --help, -h     this text\n"
    "  plan's exit code 1 also means: the request does not fit\n";

constexpr const char* kForwardHelp =
    "usage: orochi forward [TRANSFORMER_DIR] [--width W --height H --frames F --text-rows L --seed S\n"
    "                      --t-video T --t-audio T --json]\n"
    "  one MiniMax-H3 denoiser forward over a packed t2va layout with random inputs, on the CPU; without\n"
    "  TRANSFORMER_DIR the built-in tiny demo model\n"
    "  --width W --height H   canvas, " OROCHI_CANVAS_LIMITS " (demo 128x64, else 256x256)\n"
    "  --frames F             " OROCHI_FRAMES_LIMITS " (default 22)\n"
    "  --text-rows L          " OROCHI_TEXT_ROWS_LIMITS " (default 16)\n"
    "  --seed S               random inputs' seed, " OROCHI_SEED_LIMITS " (default 0)\n"
    "  --t-video T --t-audio T   timesteps in [0, 1], 1 = clean (default 0.3 and 0.4)\n"
    "  --json                 the layout, timings and statistics as JSON\n"
    "  --help, -h             this text\n";

constexpr const char* kInspectHelp =
    "usage: orochi inspect [TRANSFORMER_DIR] [--json]\n"
    "  a MiniMax-H3 transformer checkpoint's config, parameters per module group, dtypes and bytes, from\n"
    "  the safetensors headers alone; every tensor's shape is checked against config.json as generate\n"
    "  checks it, and unknown or missing keys are named. Without TRANSFORMER_DIR: the built-in tiny demo\n"
    "  model. Exit 1 when the checkpoint does not match its config.\n"
    "  --json         the same as JSON\n"
    "  --help, -h     this text\n";

constexpr const char* kBenchHelp =
    "usage: orochi bench dit|text [options]   (CUDA build, on a GPU; random weights of the real shapes)\n"
    "  dit    the MiniMax-H3 denoiser forward: `orochi help bench dit`\n"
    "  text   the Qwen3-VL-32B text stack H3 conditions on: `orochi help bench text`\n";

constexpr const char* kBenchDitHelp =
    "usage: orochi bench dit [--res 480p|768p|WxH] [--frames 124] [--text-rows 256] [--layers 50] [--warmup 2]\n"
    "                        [--iters 5] [--device 0] [--seed 1] [--json] [--profile] [--dump-outputs PATH]\n"
    "                        [--gpus 1] [--parallel auto|none|tpN|spN|tpNxspM] [--comm-timeout 60]\n"
    "                        [--vram-per-gpu GiB [--tier host|peer] [--slots 2]] [--set NAME=VALUE,...]\n"
    "                        [--precision bf16|fp8|int8]\n"
    "                        [--lora FILE[:STRENGTH] ...] [--refs LIST]\n"
    "  the H3 denoiser forward on a GPU with random weights of the real shapes, generated on the GPU\n"
    "  --res             480p, 768p or WxH (" OROCHI_CANVAS_LIMITS ")\n"
    "  --frames F        " OROCHI_FRAMES_LIMITS "\n"
    "  --text-rows L     " OROCHI_TEXT_ROWS_LIMITS "\n"
    "  --layers N        denoiser blocks (default 50); --iters >= 1, --warmup >= 0\n"
    "  --gpus N          N GPUs from --device on on the same request, laid out by --parallel\n"
    "  --vram-per-gpu GiB   hold the weights the planner places for that cap; the other blocks stream\n"
    "                    from pinned host RAM (--tier host) or the next GPU (--tier peer) through --slots slots\n"
    "  --profile         per-stage times of every rank\n"
    "  --lora FILE[:STRENGTH]  (repeatable) a LoRA merged on the GPU into the random weights (the host\n"
    "                    merge's sums and roundings; the whole model on each GPU: no tp, no --vram-per-gpu)\n"
    "  --refs LIST       ref2va's packed layout: reference blocks before the target, by encoded size,\n"
    "                    comma-separated: image:WxH, video:WxHxF[+audio] (F frames, snapped to 17n + 5;\n"
    "                    +audio: its soundtrack), audio:SECONDS (e.g. image:2048x3072,video:832x480x120+audio)\n"
    "  --dump-outputs PATH   after the timed forwards, write the last forward's video/audio outputs (f32)\n"
    "                    with its inputs, layout and timesteps to the safetensors file PATH (for\n"
    "                    scripts/device/compare_h3_full.py)\n"
    "  --set NAME=VALUE,...  run switches (kernel variants, SP schemes); an unknown name or value is refused\n"
    "                    with the valid ones\n"
    "  --precision P     bf16 (default), fp8 or int8: the blocks' linears quantized at load (one GPU, no\n"
    "                    --lora); scripts/device/run_h3_precision.sh times and compares the three\n"
    "  --help, -h        this text\n";

constexpr const char* kBenchTextHelp =
    "usage: orochi bench text [--tokens 256] [--layers 50] [--warmup 2] [--iters 5] [--device 0] [--seed 7]\n"
    "                         [--json] [--dump-outputs PATH]\n"
    "                         [--checkpoint DIR | --write-checkpoint DIR] [--stream-layers N [--tier host|peer]\n"
    "                         [--slots 2]] [--precision bf16|fp8|int8]\n"
    "  the Qwen3-VL-32B text stack on a GPU, random weights of the real shapes (bf16), token\n"
    "  i = (i * 7919 + seed) mod vocab\n"
    "  --tokens L        prompt tokens, " OROCHI_TEXT_ROWS_LIMITS "\n"
    "  --layers N        decoder layers, 1 to 64 (the residual after N layers, as H3 reads it at 50)\n"
    "  --iters >= 1, --warmup >= 0, --device >= 0, --seed " OROCHI_SEED_LIMITS "\n"
    "  --checkpoint DIR  the weights of a text_encoder/ folder instead, load time reported (page cache -> GPU)\n"
    "  --precision P     the stack's linears: bf16 (default), or fp8 / int8 quantized at load per output\n"
    "                    channel (the stack the conditioner-precision switch runs; not with --write-checkpoint)\n"
    "  --write-checkpoint DIR   write the random weights there as a Qwen3VLTextModel folder (bf16)\n"
    "  --stream-layers N the last N layers (0 to --layers) stay in pinned host RAM (--tier host) or on the\n"
    "                    other GPU (--tier peer) and stream in through --slots (>= 1) slots\n"
    "  --dump-outputs PATH   write token_ids (i64 [L]) and hidden (f32 [L, 5120], the residual stream after\n"
    "                    --layers layers) to the safetensors file PATH (for scripts/device/compare_qwen3vl_full.py)\n"
    "  --help, -h        this text\n";

constexpr const char* kServeHelp =
    "usage: orochi serve [MODEL_DIR] [--host 127.0.0.1] [--port 8000] [--api-key KEY | --api-key-file F]\n"
    "                    [--jobs-dir orochi-jobs] [--media-root DIR] [--lora-dir DIR] [--queue-max 16]\n"
    "                    [--max-upload-mb 256] [--crf 18] [--quiet] [generate's model-source and engine options]\n"
    "  the model loaded once and kept; video jobs over HTTP as the OpenAI videos API (POST /v1/videos,\n"
    "  GET /v1/videos[/{id}[/content|/events]], DELETE /v1/videos/{id}, GET /v1/models, GET /health) and a\n"
    "  page at / to use it from a browser (README.md: `orochi serve`, a curl example per route)\n"
    "  MODEL_DIR              as generate: a MiniMax-H3 folder; without it the built-in demo model (CPU)\n"
    "  --host H               the address to listen on (default 127.0.0.1: this machine only); another\n"
    "                         address without --api-key is served with a warning\n"
    "  --port P               0 to 65535 (default 8000; 0: a free port, printed on stdout)\n"
    "  --api-key KEY          every route but / and /health needs 'Authorization: Bearer KEY'\n"
    "  --api-key-file F       the key from F's first line (keeps it out of the process list)\n"
    "  --jobs-dir DIR         each job's request, status, uploads, video and report, in DIR/<id>/ (default\n"
    "                         orochi-jobs; created, its parent must exist); at start, finished jobs are\n"
    "                         listed again and jobs a stop interrupted are marked failed (not re-run)\n"
    "  --media-root DIR       requests may name reference files by path relative to DIR (never outside\n"
    "                         it); without it only uploaded files are taken\n"
    "  --lora-dir DIR         every DIR/*.safetensors LoRA is offered to requests by its file name\n"
    "                         without .safetensors (strength 1 unless a request gives one), beside the\n"
    "                         --lora files; merged only when a request names it\n"
    "  --queue-max N          jobs waiting at most, 1 to 100000 (default 16); more get 429. Jobs run one\n"
    "                         at a time\n"
    "  --max-upload-mb N      a multipart request's size at most, 1 to 1048576 MiB (default 256); JSON\n"
    "                         bodies 1 MiB\n"
    "  --crf Q                the videos' H.264 quality 0 to 51 (default 18)\n"
    "  --random-weights --transformer FILE --transformer-config F --qkv-order O --lora FILE[:STRENGTH]\n"
    "  --vae F --audio-vae F --text-encoder F --tokenizer DIR --comfy-models DIR\n"
    "                         the model source, as generate takes it (the --lora files merged at start)\n"
    "  --device D --gpus N --parallel MODE --comm-timeout S --set NAME=VALUE[,...] --precision P\n"
    "                         where and how it runs, as generate takes them\n"
    "  --quiet                no engine notes on stderr\n"
    "  --help, -h             this text\n"
    "  per request (POST /v1/videos fields, README.md's table): the schedule as generate's options set it\n"
    "  (preset turbo8|turbo4, sigmas and audio_sigmas as number arrays, video_shift, audio_shift), and\n"
    "  loras: the LoRAs to run, from those --lora and --lora-dir offer (GET /v1/models lists them), each a\n"
    "  name (file stem) or {\"name\": N, \"strength\": S}, in order; [] none; left out: the --lora files. A set\n"
    "  differing from the last job's is merged anew into freshly read weights; the same set is not\n"
    "  stops on SIGINT / SIGTERM; a job running then is marked failed at the next start\n";

constexpr const char* kHelpHelp =
    "usage: orochi help [COMMAND]\n"
    "  the overview, or one command's options with their defaults and limits; `orochi COMMAND --help`\n"
    "  (or -h) prints the same\n";

}  // namespace

const char* const kExitCodesHelp =
    "exit codes: 0 done; 1 the request cannot be done (sizes the model cannot take, a missing or\n"
    "  mismatched file, an output that cannot be written, not enough memory, no GPU); 2 usage: the\n"
    "  command line is wrong (unknown command or option, a missing value, an option name where a value\n"
    "  belongs, an option given twice, a value that is not a number or is outside its range);\n"
    "  130 / 143 interrupted by SIGINT / SIGTERM (temporary files removed)\n";

const std::vector<std::string>& help_topics() {
  static const std::vector<std::string> topics = {"generate", "plan",      "forward",    "inspect",
                                                  "bench",    "bench dit", "bench text", "serve", "help",
                                                  "switches"};
  return topics;
}

std::string command_help(const std::string& command) {
  const char* text = nullptr;
  if (command == "generate") text = kGenerateHelp;
  if (command == "plan") text = kPlanHelp;
  if (command == "forward") text = kForwardHelp;
  if (command == "inspect") text = kInspectHelp;
  if (command == "bench") text = kBenchHelp;
  if (command == "bench dit") text = kBenchDitHelp;
  if (command == "bench text") text = kBenchTextHelp;
  if (command == "serve") text = kServeHelp;
  if (command == "help") text = kHelpHelp;
  if (command == "switches") return switches_help();
  if (text == nullptr) return "";
  return std::string(text) + kExitCodesHelp;
}

// The run switches, from the engine's one table (engine/run_switches.cpp).
std::string switches_help() {
  std::string out =
      "orochi help switches: run switches, on generate and bench dit as --set NAME=VALUE[,NAME=VALUE...] or\n"
      "through the environment variable each names (the command line wins); an unknown name or value, or an\n"
      "unknown OROCHI_* variable, is refused; the stage report records them all. The first value is the default.\n";
  for (const engine::SwitchInfo& s : engine::run_switch_table())
    out += "  " + s.name + " (" + s.env + "): " + s.values + "\n      " + s.about + "\n";
  return out;
}

std::string general_help() {
  return std::string(
             "usage: orochi <command> [options]     (orochi help <command>, or orochi <command> --help)\n"
             "commands:\n"
             "  generate [DIR]   text to video with audio: writes an MP4 (built-in tiny demo model without DIR)\n"
             "  inspect [PATH]   print a checkpoint's config, parameter groups, dtypes and bytes; check its shapes\n"
             "  forward [PATH]   run one MiniMax-H3 denoiser forward (built-in tiny model without PATH)\n"
             "  plan             memory plan per GPU and phase for a request (no weights loaded)\n"
             "  bench dit|text   time the H3 denoiser (dit) or the Qwen3-VL text stack (text) on a GPU with\n"
             "                   random weights of the real shapes\n"
             "  serve [DIR]      keep the model loaded and take video jobs over HTTP (OpenAI videos API, a page at /)\n"
             "  help [COMMAND]   this text, or a command's options and their limits; help switches: the run switches\n"
             "limits: canvas " OROCHI_CANVAS_LIMITS "; " OROCHI_FRAMES_LIMITS ";\n"
             "  steps " OROCHI_STEPS_LIMITS "; seed " OROCHI_SEED_LIMITS "; text rows " OROCHI_TEXT_ROWS_LIMITS "\n") +
         kExitCodesHelp;
}

std::string help_topic_requested(const std::string& command, const std::vector<std::string>& args) {
  bool asked = false;
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") asked = true;
  }
  if (!asked) return "";
  if (command == "bench" && !args.empty() && (args[0] == "dit" || args[0] == "text")) return "bench " + args[0];
  return command;
}

}  // namespace orochi::apps
