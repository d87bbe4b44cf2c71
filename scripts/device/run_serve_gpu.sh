#!/usr/bin/env bash
# On the device machine, in one call (issue 26's device check): `orochi serve --random-weights --device
# cuda` (the released shapes, random weights generated on the GPU) takes two 832x480x124 8-step jobs
# back to back over HTTP; each job's timings (load, per step, e2e) are printed. Then, with the server
# stopped, `orochi generate` of the same request on the same machine: its per-step time beside the jobs'.
# Usage (device run, carry .pack .whl-av): bash scripts/device/run_serve_gpu.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
pack=$(ls .pack-serve/gpu-dist.tar.xz .pack/gpu-dist.tar.xz 2>/dev/null | head -1)
if [ -n "$pack" ]; then rm -rf gpu-dist && tar xJf "$pack" || exit 1; fi
# PyAV for the MP4 (the device has no FFmpeg: orochi's MP4 fallback runs scripts/device/ffmpeg_pyav.py),
# from .whl-av/ (av alone, to stay within the carry limit) or .whl/.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  $(ls .whl-av/*.whl .whl/av-*.whl 2>/dev/null) && export PYTHONPATH=/tmp/site
command -v ffmpeg >/dev/null || export OROCHI_FFMPEG="$root/scripts/device/ffmpeg_pyav.py"
port=8765
rm -rf /tmp/serve-jobs
gpu-dist/orochi serve --random-weights --device cuda --port "$port" --jobs-dir /tmp/serve-jobs > "$OUT/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 180); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 1; done
curl -sf "http://127.0.0.1:$port/health" | sed 's/^/[serve-gpu] health /' || { tail -20 "$OUT/serve.log"; kill $server; exit 1; }
python3 - "$port" <<'PY'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())
for seed in (1, 2):
    t0 = time.time()
    job = call("POST", "/v1/videos", {"prompt": "random weights", "size": "832x480", "frames": 124, "steps": 8,
                                       "seed": seed})
    while job["status"] in ("queued", "in_progress"):
        time.sleep(0.5)
        job = call("GET", "/v1/videos/" + job["id"])
    t = job.get("timings", {})
    step = t.get("per_step", {})
    print(f"[serve-gpu] job {seed}: {job['status']} in {time.time() - t0:.1f} s wall; load {t.get('load')} s, "
          f"pre {t.get('pre')} s, per step median {step.get('median')} (min {step.get('min')}, max {step.get('max')}), "
          f"post {t.get('post')} s, e2e {t.get('e2e')} s, request {t.get('request_index')}"
          + (f"; error {job.get('error')}" if job["status"] != "completed" else ""), flush=True)
    print("[serve-gpu] timings " + json.dumps(t), flush=True)
PY
kill -TERM $server; wait $server
echo "== orochi generate, the same request"
gpu-dist/orochi generate --quiet --random-weights --device cuda --width 832 --height 480 --frames 124 --steps 8 \
  --out /tmp/serve-gen.mp4 2> "$OUT/generate.err"
python3 -c "import json; t = json.load(open('/tmp/serve-gen.json'))['stages_s']; s = t['per_step']; print('[serve-gpu] generate: load %s s, per step median %.4f (min %.4f, max %.4f), e2e %s s' % (t.get('load'), s['median'], s['min'], s['max'], t.get('e2e')))" \
  || tail -5 "$OUT/generate.err"
