#!/usr/bin/env python3
"""End-to-end check of `orochi serve` (issue 26) on the built-in demo model, with real HTTP clients
from Python's standard library (no pip): jobs created, polled and streamed, their MP4s checked with
ffprobe, a cancel mid-run, the queue filled to its bound (429 after), 20 concurrent clients, a
restart that finds every finished job and video intact, and hostile requests each answered with the
right 4xx and nothing written outside the jobs folder.

    python3 scripts/check_serve.py [--orochi build/orochi] [--keep]

ctest runs it as check_serve. Exit 0 when every check passes; each failure names what was expected.
"""
import argparse
import hashlib
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib

KEY = "check-serve-" + uuid.uuid4().hex
QUEUE_MAX = 3
UPLOAD_MB = 2
# The smallest demo requests the checks allow: 64x64, 22 frames (17n + 5), one or two steps.
TINY = {"size": "64x64", "frames": 22, "steps": 1}
LONG = {"size": "64x64", "frames": 22, "steps": 1000}  # ~15 s on 2 cores: cancelled long before


class CheckFailed(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise CheckFailed(what)


def lora_file(path, hidden=32, inner=32, rank=2):
    """A diffusers-format LoRA on the demo model's block 0 q projection, as safetensors (f32)."""
    key = "transformer.transformer_blocks.0.attn.to_q."
    tensors = [(key + "lora_A.weight", [rank, hidden]), (key + "lora_B.weight", [inner, rank])]
    header, data = {}, b""
    for i, (name, shape) in enumerate(tensors):
        values = [0.5 * ((j * 7 + i * 3) % 11 - 5) / 5 for j in range(shape[0] * shape[1])]
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * len(values)]}
        data += struct.pack("<%df" % len(values), *values)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def png(width, height):
    """A small RGB PNG (a gradient), as keyframe uploads."""
    rows = b"".join(b"\x00" + b"".join(bytes((x * 255 // (width - 1), y * 255 // (height - 1), 96)) for x in range(width))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


class Server:
    """`orochi serve` on a free loopback port; its stderr in a log file beside the jobs folder."""

    def __init__(self, orochi, work, jobs, media):
        self.orochi, self.work, self.jobs, self.media = orochi, work, jobs, media
        self.process = None
        self.port = None
        self.starts = 0

    def start(self):
        self.starts += 1
        log = open(os.path.join(self.work, "serve-%d.log" % self.starts), "wb")
        self.process = subprocess.Popen(
            [self.orochi, "serve", "--port", "0", "--jobs-dir", self.jobs, "--media-root", self.media, "--api-key", KEY,
             "--queue-max", str(QUEUE_MAX), "--max-upload-mb", str(UPLOAD_MB), "--lora-dir", os.path.join(self.work, "loras"), "--quiet"],
            stdout=subprocess.PIPE, stderr=log)
        line = self.process.stdout.readline().decode()
        expect("listening on http://127.0.0.1:" in line, "orochi serve did not say where it listens: %r (log %s)" % (line, log.name))
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)
        self.process = None


class Client:
    def __init__(self, server, key=KEY):
        self.server, self.key = server, key

    def request(self, method, path, body=None, headers=None, key=None, timeout=60):
        key = self.key if key is None else key
        h = dict(headers or {})
        if key:
            h["Authorization"] = "Bearer " + key
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def json(self, method, path, fields=None, **kw):
        body = None if fields is None else json.dumps(fields).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        status, headers, data = self.request(method, path, body, headers, **kw)
        try:
            return status, json.loads(data) if data else None
        except ValueError:
            raise CheckFailed("%s %s answered %d with non-JSON %r" % (method, path, status, data[:200]))

    def create(self, fields):
        status, body = self.json("POST", "/v1/videos", fields)
        expect(status == 200, "POST /v1/videos %s: %d %s" % (fields, status, body))
        return body

    def multipart(self, fields, files):
        boundary = "check-" + uuid.uuid4().hex
        parts = []
        for name, value in fields.items():
            text = value if isinstance(value, str) else json.dumps(value)
            parts.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (boundary, name, text)).encode())
        for name, filename, kind, data in files:
            parts.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\nContent-Type: %s\r\n\r\n"
                          % (boundary, name, filename, kind)).encode() + data + b"\r\n")
        body = b"".join(parts) + ("--%s--\r\n" % boundary).encode()
        status, _, data = self.request("POST", "/v1/videos", body, {"Content-Type": "multipart/form-data; boundary=" + boundary})
        return status, json.loads(data)

    def get(self, video_id):
        status, body = self.json("GET", "/v1/videos/" + video_id)
        expect(status == 200, "GET /v1/videos/%s: %d %s" % (video_id, status, body))
        return body

    def wait(self, video_id, statuses=("completed", "failed", "cancelled"), timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = self.get(video_id)
            if v["status"] in statuses:
                return v
            time.sleep(0.1)
        raise CheckFailed("%s did not reach %s in %d s (last: %s)" % (video_id, statuses, timeout, v["status"]))

    def content(self, video_id, headers=None):
        return self.request("GET", "/v1/videos/%s/content" % video_id, headers=headers)

    def events(self, video_id, on_event=None, timeout=120):
        """The job's server-sent events until the stream ends: [(type, data)]."""
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=timeout)
        conn.request("GET", "/v1/videos/%s/events" % video_id, headers={"Authorization": "Bearer " + self.key})
        r = conn.getresponse()
        expect(r.status == 200 and r.getheader("Content-Type", "").startswith("text/event-stream"),
               "events of %s: %d %s" % (video_id, r.status, r.getheader("Content-Type")))
        got, kind, data = [], None, ""
        while True:
            line = r.readline()
            if not line:
                break
            line = line.decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                data += line[6:]
            elif line == "" and kind:
                event = (kind, json.loads(data))
                got.append(event)
                if on_event:
                    on_event(event)
                kind, data = None, ""
        conn.close()
        return got


def ffprobe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,width,height,nb_frames",
                          "-of", "json", path], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["streams"]


def tree(root, skip):
    """Every path under root but `skip`'s, with its size and mtime: what the checks must not change."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
        for name in files + dirs:
            p = os.path.join(folder, name)
            if p in skip:
                continue
            st = os.lstat(p)
            found[p] = (st.st_size, st.st_mtime_ns)
    return found


class Checks:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="orochi_check_serve_")
        self.jobs = os.path.join(self.work, "jobs")
        self.media = os.path.join(self.work, "media")
        os.makedirs(os.path.join(self.media, "keyframes"))
        with open(os.path.join(self.media, "keyframes", "first.png"), "wb") as f:
            f.write(png(96, 64))
        with open(os.path.join(self.work, "outside.png"), "wb") as f:
            f.write(png(32, 32))
        os.makedirs(os.path.join(self.work, "loras"))
        lora_file(os.path.join(self.work, "loras", "style.safetensors"))
        self.server = Server(args.orochi, self.work, self.jobs, self.media)
        self.c = Client(self.server)
        self.finished = {}  # id -> (status, sha256 of the video or None)
        self.t0 = time.time()

    def log(self, what):
        print("[%6.1f s] ok: %s" % (time.time() - self.t0, what), flush=True)

    def run(self):
        try:
            self.server.start()
            self.log("orochi serve on the demo model at 127.0.0.1:%d" % self.server.port)
            self.basics()
            self.three_jobs()
            self.cancel_mid_run()
            self.queue_bound()
            self.concurrent_clients()
            self.hostile_requests()
            self.request_loras()
            self.restart()
        finally:
            self.server.stop()
            if not self.args.keep:
                subprocess.run(["rm", "-rf", self.work])
            else:
                print("kept", self.work)

    def basics(self):
        status, _, data = self.c.request("GET", "/health", key="")
        expect(status == 200 and json.loads(data)["status"] == "ok", "/health without a key: %d %r" % (status, data))
        status, headers, data = self.c.request("GET", "/", key="")
        expect(status == 200 and headers["content-type"].startswith("text/html") and b"orochi serve" in data,
               "the page: %d %s" % (status, headers.get("content-type")))
        status, models = self.c.json("GET", "/v1/models")
        expect(status == 200 and models["data"][0]["id"] == "minimax-h3-demo", "/v1/models: %s" % models)
        self.model = models["data"][0]["id"]
        self.log("/health and / open, /v1/models lists %s" % self.model)

    def three_jobs(self):
        """Three jobs (t2va JSON twice, fl2va with an uploaded keyframe), polled and streamed, MP4s probed."""
        a = self.c.create(dict(TINY, prompt="a fox in snow", seed=1))
        b = self.c.create(dict(TINY, prompt="a boat at dusk", seed=2, steps=2, model=self.model))
        status, c = self.c.multipart({"prompt": "from a keyframe", "size": "64x64", "frames": 124, "steps": 1},
                                     [("image", "first.png", "image/png", png(96, 64))])
        expect(status == 200, "multipart fl2va: %d %s" % (status, c))
        for v in (a, b, c):
            expect(v["object"] == "video" and v["status"] in ("queued", "in_progress") and v["id"].startswith("video_"),
                   "a new job's object: %s" % v)
        expect(c["workflow"] == "fl2va" and c["references"][0]["name"] == "first.png", "fl2va job: %s" % c)
        stream = self.c.events(b["id"])
        kinds = [k for k, _ in stream]
        expect(kinds[-1] == "done" and stream[-1][1]["status"] == "completed", "b's events end with done: %s" % kinds)
        steps = [d for k, d in stream if k == "progress" and d.get("stage") == "denoise"]
        expect(steps and steps[-1]["done"] == 2 and steps[-1]["total"] == 2 and "eta_seconds" in steps[-1]
               and "seconds_per_unit" in steps[-1], "b's denoise progress: %s" % steps)
        for v, frames in ((a, 22), (b, 22), (c, 124)):
            done = self.c.wait(v["id"])
            expect(done["status"] == "completed" and done["progress"] == 100 and done["completed_at"],
                   "%s: %s" % (v["id"], done))
            expect(done["url"] == "/v1/videos/%s/content" % v["id"], "url of %s" % v["id"])
            status, headers, mp4 = self.c.content(v["id"])
            expect(status == 200 and headers["content-type"] == "video/mp4" and mp4[4:8] == b"ftyp",
                   "content of %s: %d %s" % (v["id"], status, headers.get("content-type")))
            path = os.path.join(self.work, v["id"] + ".mp4")
            with open(path, "wb") as f:
                f.write(mp4)
            streams = ffprobe(path)
            video = [s for s in streams if s["codec_type"] == "video"]
            audio = [s for s in streams if s["codec_type"] == "audio"]
            expect(video and audio, "%s has video and audio streams: %s" % (v["id"], streams))
            expect(video[0]["width"] == 64 and video[0]["height"] == 64 and int(video[0]["nb_frames"]) == frames,
                   "%s's video stream: %s" % (v["id"], video[0]))
            self.finished[v["id"]] = ("completed", hashlib.sha256(mp4).hexdigest())
        # A byte range, and one past the end.
        status, headers, part = self.c.content(a["id"], {"Range": "bytes=10-109"})
        expect(status == 206 and len(part) == 100 and headers["content-range"].startswith("bytes 10-109/"),
               "range: %d %s" % (status, headers.get("content-range")))
        status, headers, _ = self.c.content(a["id"], {"Range": "bytes=99999999-"})
        expect(status == 416 and headers["content-range"].startswith("bytes */"), "range past the end: %d" % status)
        self.log("3 jobs (t2va x2, fl2va from an upload): events, MP4s with video + audio (ffprobe), ranges")

    def cancel_mid_run(self):
        v = self.c.create(dict(LONG, prompt="cancel me"))
        cancelled = {}

        def on_event(event):
            kind, data = event
            if kind == "progress" and data.get("stage") == "denoise" and data["done"] >= 3 and not cancelled:
                status, body = self.c.json("DELETE", "/v1/videos/" + v["id"])
                expect(status == 200 and body["cancel_requested"], "DELETE of a running job: %d %s" % (status, body))
                cancelled["at"] = data["done"]
                cancelled["t"] = time.time()

        stream = self.c.events(v["id"], on_event)
        expect(cancelled, "the long job never reached step 3")
        final = stream[-1]
        expect(final[0] == "done" and final[1]["status"] == "cancelled", "events end cancelled: %s" % (final,))
        steps = max(d["done"] for k, d in stream if k == "progress" and d.get("stage") == "denoise")
        expect(steps < 1000 and time.time() - cancelled["t"] < 5, "stopped at step %d of 1000" % steps)
        status, _ = self.c.json("GET", "/v1/videos/%s/content" % v["id"])
        expect(status == 409, "content of a cancelled job: %d" % status)
        self.finished[v["id"]] = ("cancelled", None)
        self.log("cancel mid-run: asked at step %d, cancelled at step %d of 1000" % (cancelled["at"], steps))

    def queue_bound(self):
        blocker = self.c.create(dict(LONG, prompt="blocker"))
        self.c.wait(blocker["id"], ("in_progress",))
        queued = [self.c.create(dict(TINY, prompt="queued %d" % i)) for i in range(QUEUE_MAX)]
        expect([q["queue_position"] for q in queued] == list(range(1, QUEUE_MAX + 1)),
               "queue positions: %s" % [q.get("queue_position") for q in queued])
        jobs_before = len(os.listdir(self.jobs))
        status, body = self.c.json("POST", "/v1/videos", dict(TINY, prompt="one too many"))
        expect(status == 429 and body["error"]["code"] == "queue_full", "a full queue: %d %s" % (status, body))
        expect(len(os.listdir(self.jobs)) == jobs_before, "a refused job left a folder")
        for q in queued + [blocker]:
            status, body = self.c.json("DELETE", "/v1/videos/" + q["id"])
            expect(status == 200, "DELETE %s: %d" % (q["id"], status))
        for q in queued:
            expect(self.c.get(q["id"])["status"] == "cancelled", "a queued job cancelled at once")
            self.finished[q["id"]] = ("cancelled", None)
        expect(self.c.wait(blocker["id"])["status"] == "cancelled", "the blocker cancelled")
        self.finished[blocker["id"]] = ("cancelled", None)
        self.log("queue bound %d: %d queued behind a running job, the next got 429; all cancelled" % (QUEUE_MAX, QUEUE_MAX))

    def concurrent_clients(self, n=20):
        results, errors, refused = {}, [], [0]
        lock = threading.Lock()

        def client(i):
            try:
                mine = dict(TINY, prompt="client %d %s" % (i, uuid.uuid4().hex), seed=1000 + i)
                while True:  # a full queue says 429: a client retries
                    status, body = self.c.json("POST", "/v1/videos", mine)
                    if status != 429:
                        break
                    with lock:
                        refused[0] += 1
                    time.sleep(0.2)
                expect(status == 200, "client %d: %d %s" % (i, status, body))
                if i % 4 == 0:
                    kinds = [k for k, _ in self.c.events(body["id"])]
                    expect(kinds[-1] == "done", "client %d's events: %s" % (i, kinds))
                done = self.c.wait(body["id"])
                expect(done["status"] == "completed", "client %d: %s" % (i, done))
                expect(done["prompt"] == mine["prompt"] and done["seed"] == mine["seed"],
                       "client %d got someone else's job: %s" % (i, done))
                status, _, mp4 = self.c.content(body["id"])
                expect(status == 200 and mp4[4:8] == b"ftyp", "client %d's video" % i)
                with lock:
                    results[body["id"]] = hashlib.sha256(mp4).hexdigest()
            except Exception as e:  # reported below, with the others
                with lock:
                    errors.append("client %d: %s" % (i, e))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        expect(not errors, "; ".join(errors))
        expect(len(results) == n, "%d distinct jobs for %d clients" % (len(results), n))
        listed = {}
        after = None
        while True:  # the list, page by page
            status, page = self.c.json("GET", "/v1/videos?limit=7" + ("&after=" + after if after else ""))
            expect(status == 200, "list: %d" % status)
            listed.update({v["id"]: v["status"] for v in page["data"]})
            if not page["has_more"]:
                break
            after = page["last_id"]
        expect(all(listed.get(i) == "completed" for i in results), "the list shows every client's job completed")
        for i, digest in results.items():
            self.finished[i] = ("completed", digest)
        self.log("%d concurrent clients: %d distinct completed jobs, none mixed up, %d retries after 429; list paged"
                 % (n, len(results), refused[0]))

    def hostile_requests(self):
        outside = os.path.join(self.work, "outside.png")
        before = tree(self.work, {self.jobs} | {os.path.join(self.work, f) for f in os.listdir(self.work) if f.startswith("serve-")})
        folders_before = sorted(os.listdir(self.jobs))
        ok = dict(TINY, prompt="hostile")

        def posted(body, content_type="application/json"):
            return self.c.request("POST", "/v1/videos", body, {"Content-Type": content_type})

        cases = [
            ("malformed JSON", posted(b'{"prompt": "x", '), 400, "invalid_request"),
            ("not an object", posted(b'["prompt"]'), 400, "invalid_request"),
            ("wrong type", posted(json.dumps(dict(ok, steps="8")).encode()), 400, "invalid_request"),
            ("wrong type (size)", posted(json.dumps(dict(ok, size=64)).encode()), 400, "invalid_request"),
            ("unknown field", posted(json.dumps(dict(ok, colour="red")).encode()), 400, "invalid_request"),
            ("negative prompt", posted(json.dumps(dict(ok, negative_prompt="blur")).encode()), 400, "invalid_request"),
            ("size not a multiple of 32", posted(json.dumps(dict(ok, size="70x64")).encode()), 400, "invalid_request"),
            ("13 references", posted(json.dumps(dict(ok, references=[{"type": "image", "path": "keyframes/first.png"}] * 13)).encode()),
             400, "invalid_request"),
            ("../ path", posted(json.dumps(dict(ok, frames=124, image="../outside.png")).encode()), 400, "invalid_request"),
            ("absolute path", posted(json.dumps(dict(ok, frames=124, image=outside)).encode()), 400, "invalid_request"),
            ("absolute reference", posted(json.dumps(dict(ok, references=[{"type": "image", "path": "/etc/passwd"}])).encode()),
             400, "invalid_request"),
            ("text/plain body", posted(b"prompt=x", "text/plain"), 415, "unsupported_media_type"),
            ("no API key", self.c.request("GET", "/v1/videos", key=""), 401, "unauthorized"),
            ("wrong API key", self.c.request("GET", "/v1/videos", key="nope"), 401, "unauthorized"),
            ("no key on a POST", self.c.request("POST", "/v1/videos", json.dumps(ok).encode(), {"Content-Type": "application/json"}, key=""),
             401, "unauthorized"),
            ("no key on the events", self.c.request("GET", "/v1/videos/video_%s/events" % ("0" * 32), key=""), 401, "unauthorized"),
            ("not an id", self.c.request("GET", "/v1/videos/..%2F..%2Fetc"), 404, "not_found"),
            ("malformed id", self.c.request("GET", "/v1/videos/video_XYZ"), 400, "invalid_video_id"),
            ("unknown id", self.c.request("GET", "/v1/videos/video_" + "0" * 32), 404, "video_not_found"),
            ("unknown id (delete)", self.c.request("DELETE", "/v1/videos/video_" + "0" * 32), 404, "video_not_found"),
            ("bad list limit", self.c.request("GET", "/v1/videos?limit=0"), 400, "invalid_request"),
            ("no route", self.c.request("GET", "/v2/things"), 404, "not_found"),
        ]
        # A multipart upload with a file part where no file belongs, and a file of no kind.
        boundary = "b" + uuid.uuid4().hex
        body = ("--%s\r\nContent-Disposition: form-data; name=\"prompt\"; filename=\"p.txt\"\r\nContent-Type: text/plain\r\n\r\nx\r\n--%s--\r\n"
                % (boundary, boundary)).encode()
        cases.append(("a file in a text field", posted(body, "multipart/form-data; boundary=" + boundary), 400, "invalid_request"))
        status, reply = self.c.multipart(dict(TINY, prompt="x"), [("reference", "blob.bin", "application/octet-stream", b"123")])
        cases.append(("a reference of no kind", (status, {}, json.dumps(reply).encode()), 400, "invalid_request"))
        for name, (status, headers, data), want, code in cases:
            try:
                err = json.loads(data)["error"]
            except (ValueError, KeyError):
                raise CheckFailed("%s: %d with no JSON error: %r" % (name, status, data[:200]))
            expect(status == want and err["code"] == code and err["message"],
                   "%s: expected %d %s, got %d %s" % (name, want, code, status, err))
        # A 1 GiB upload (and a 2 MiB JSON body): refused from the headers, before any of the body is sent.
        for name, content_type, length in (("1 GiB upload", "multipart/form-data; boundary=x", 1 << 30),
                                           ("2 MiB JSON", "application/json", 2 << 20)):
            t = time.time()
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
            s.sendall(("POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\n"
                       "Content-Length: %d\r\n\r\n" % (KEY, content_type, length)).encode())
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
            s.close()
            expect(reply.startswith(b"HTTP/1.1 413"), "%s: %r" % (name, reply[:100]))
            expect(time.time() - t < 3, "%s: the refusal took %.1f s" % (name, time.time() - t))
        # curl's way: Expect: 100-continue gets the 413 instead of the go-ahead.
        status, _, _ = self.c.request("POST", "/v1/videos", None, {"Content-Type": "multipart/form-data; boundary=x",
                                                                   "Content-Length": str(1 << 30), "Expect": "100-continue"})
        expect(status == 413, "Expect: 100-continue with 1 GiB: %d" % status)
        # Chunked bodies have no length to check first: 411.
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        s.sendall(("POST /v1/videos HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n" % KEY).encode())
        expect(s.recv(4096).startswith(b"HTTP/1.1 411"), "a chunked body: not 411")
        s.close()
        after = tree(self.work, {self.jobs} | {os.path.join(self.work, f) for f in os.listdir(self.work) if f.startswith("serve-")})
        expect(before == after, "files outside the jobs folder changed: %s" % sorted(set(before) ^ set(after)))
        expect(sorted(os.listdir(self.jobs)) == folders_before, "a refused request left a job folder: %s"
               % sorted(set(os.listdir(self.jobs)) - set(folders_before)))
        self.log("%d hostile requests answered 400/401/404/411/413/415 with JSON errors; 1 GiB refused from its "
                 "headers; nothing written outside the jobs folder" % (len(cases) + 4))

    def request_loras(self):
        """A job runs --lora-dir's LoRA it names (its record says so); an unknown name is a 400 naming the offered."""
        status, _, data = self.c.request("GET", "/v1/models")
        offered = json.loads(data)["data"][0]["loras"]
        expect(status == 200 and [l["name"] for l in offered] == ["style"], "/v1/models loras: %s" % offered)
        status, _, data = self.c.request("POST", "/v1/videos", json.dumps(dict(TINY, prompt="x", loras=["nope"])).encode(),
                                         {"Content-Type": "application/json"})
        err = json.loads(data)["error"]
        expect(status == 400 and err["param"] == "loras" and "'nope'" in err["message"] and "[style]" in err["message"],
               "an unknown LoRA: %d %s" % (status, err))
        v = self.c.create(dict(TINY, prompt="styled", seed=3, loras=[{"name": "style", "strength": 0.5}]))
        done = self.c.wait(v["id"])
        expect(done["status"] == "completed" and done["loras"] == [{"name": "style", "strength": 0.5}],
               "a job with a LoRA: %s" % done)
        with open(os.path.join(self.jobs, v["id"], "video.json")) as f:
            ran = json.load(f)["loras"]
        expect(len(ran) == 1 and ran[0]["file"].endswith("style.safetensors") and ran[0]["strength"] == 0.5
               and ran[0]["cached"] is False, "the job's report of its LoRAs: %s" % ran)
        self.finished[v["id"]] = ("completed", None)
        self.log("a job ran --lora-dir's LoRA it named (recorded in its request and report); an unknown LoRA: 400 "
                 "naming the offered ones")

    def restart(self):
        running = self.c.create(dict(LONG, prompt="running at the restart"))
        waiting = self.c.create(dict(TINY, prompt="queued at the restart"))
        self.c.wait(running["id"], ("in_progress",))
        self.server.stop()
        self.server.start()
        status, page = self.c.json("GET", "/v1/videos?limit=100")
        expect(status == 200, "list after the restart: %d" % status)
        listed = {v["id"]: v for v in page["data"]}
        for video_id, (state, digest) in self.finished.items():
            expect(video_id in listed and listed[video_id]["status"] == state,
                   "%s after the restart: %s, was %s" % (video_id, listed.get(video_id, {}).get("status"), state))
            if digest:
                status, _, mp4 = self.c.content(video_id)
                expect(status == 200 and hashlib.sha256(mp4).hexdigest() == digest, "%s's video changed" % video_id)
        for v in (running, waiting):
            after = listed[v["id"]]
            expect(after["status"] == "failed" and after["error"]["code"] == "interrupted",
                   "%s (was running or queued) after the restart: %s" % (v["id"], after))
        # The restarted server takes jobs.
        v = self.c.create(dict(TINY, prompt="after the restart"))
        expect(self.c.wait(v["id"])["status"] == "completed", "a job after the restart")
        self.log("restart: %d finished jobs and their videos intact (sha256), the running and queued jobs failed "
                 "'interrupted', new jobs run" % len(self.finished))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--orochi", default=os.path.join(root, "build", "orochi"))
    parser.add_argument("--keep", action="store_true", help="keep the work folder (jobs, logs)")
    args = parser.parse_args()
    checks = Checks(args)
    try:
        checks.run()
    except CheckFailed as e:
        print("check_serve: FAILED: %s" % e, file=sys.stderr)
        return 1
    print("check_serve: every check passed in %.1f s" % (time.time() - checks.t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
