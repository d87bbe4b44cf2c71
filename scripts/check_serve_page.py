#!/usr/bin/env python3
"""Headless-browser check of `orochi serve`'s page (issue 26): Debian's Chromium, driven over the
DevTools protocol from Python's standard library, opens the page of a server on the demo model,
types a prompt, presses Generate, watches the progress bar move and the video element load the
finished MP4, and saves a screenshot (outside the repo). Done twice: without an API key (the video
plays from its URL, with byte ranges) and with one (the page asks for it; the events and the video
are fetched with it).

    python3 scripts/check_serve_page.py [--orochi build/orochi] [--chromium chromium] [--screenshot DIR]

scripts/check_serve_page.sh installs Chromium when it is missing and runs this.
"""
import argparse
import base64
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid


class CheckFailed(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise CheckFailed(what)


class WebSocket:
    """The few parts of RFC 6455 a DevTools client needs: the handshake, masked text frames out,
    unmasked frames in (continuations joined, pings answered)."""

    def __init__(self, url):
        m = re.match(r"ws://([^/:]+):(\d+)(/.*)", url)
        expect(m, "not a DevTools URL: " + url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                           % (m.group(3), m.group(1), m.group(2), key)).encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += self.sock.recv(4096)
        expect(reply.startswith(b"HTTP/1.1 101"), "DevTools refused the WebSocket: %r" % reply[:80])
        self.buffer = reply.split(b"\r\n\r\n", 1)[1]

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            expect(chunk, "DevTools closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def send(self, text):
        payload = text.encode()
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + n.to_bytes(2, "big")
        else:
            header += bytes([0x80 | 127]) + n.to_bytes(8, "big")
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def receive(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._read(2), "big")
            elif n == 127:
                n = int.from_bytes(self._read(8), "big")
            payload = self._read(n)
            opcode = b0 & 0x0F
            if opcode == 0x9:  # ping
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()


class DevTools:
    def __init__(self, ws_url):
        self.ws = WebSocket(ws_url)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.receive())
            if reply.get("id") == self.next_id:
                expect("error" not in reply, "%s: %s" % (method, reply.get("error")))
                return reply["result"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        expect("exceptionDetails" not in result, "page script failed: %s" % result.get("exceptionDetails"))
        return result["result"].get("value")


def start_server(orochi, work, key):
    args = [orochi, "serve", "--port", "0", "--jobs-dir", os.path.join(work, "jobs-" + ("key" if key else "open")), "--quiet"]
    if key:
        args += ["--api-key", key]
    server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "ab"))
    line = server.stdout.readline().decode()
    expect("listening on http://" in line, "orochi serve: %r" % line)
    return server, int(line.rsplit(":", 1)[1])


def start_chromium(chromium, work):
    profile = tempfile.mkdtemp(prefix="profile-", dir=work)
    browser = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--remote-debugging-port=0", "--user-data-dir=" + profile, "--window-size=1000,1400",
                                "--autoplay-policy=no-user-gesture-required", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = browser.stderr.readline().decode()
        m = re.search(r"DevTools listening on ws://127.0.0.1:(\d+)/", line)
        if m:
            port = int(m.group(1))
            break
    else:
        raise CheckFailed("Chromium did not start its DevTools")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/json/list")
    pages = [t for t in json.loads(conn.getresponse().read()) if t["type"] == "page"]
    expect(pages, "Chromium has no page")
    return browser, DevTools(pages[0]["webSocketDebuggerUrl"])


def check_page(devtools, server_port, key, screenshot):
    t0 = time.time()
    devtools.call("Page.enable")
    devtools.call("Page.navigate", url="http://127.0.0.1:%d/" % server_port)
    for _ in range(200):
        if devtools.evaluate("document.readyState") == "complete" and devtools.evaluate("!!document.getElementById('submit')"):
            break
        time.sleep(0.05)
    if key:  # the page shows the key field when the API answers 401
        for _ in range(200):
            if devtools.evaluate("!document.getElementById('key').classList.contains('hidden')"):
                break
            time.sleep(0.05)
        expect(devtools.evaluate("!document.getElementById('key').classList.contains('hidden')"),
               "the page did not ask for the API key")
        devtools.evaluate("const k = document.getElementById('key'); k.value = %s; k.dispatchEvent(new Event('change')); true"
                          % json.dumps(key))
    for _ in range(200):  # the model's description, through the API
        if "minimax-h3-demo" in (devtools.evaluate("document.getElementById('model').textContent") or ""):
            break
        time.sleep(0.05)
    expect("minimax-h3-demo" in devtools.evaluate("document.getElementById('model').textContent"),
           "the page did not show the model")
    prompt = "a headless fox " + uuid.uuid4().hex[:8]
    devtools.evaluate("""(() => {
      const set = (id, v) => { document.getElementById(id).value = v; };
      set('prompt', %s); set('size', '128x128'); set('frames', '56'); set('steps', '40'); set('seed', '7');
      document.getElementById('submit').click(); return true; })()""" % json.dumps(prompt))
    seen, stages = [], []
    deadline = time.time() + 120
    while time.time() < deadline:
        state = devtools.evaluate("""(() => { const v = document.getElementById('player');
          return {progress: document.getElementById('progress').value, stage: document.getElementById('stage').textContent,
                  title: document.getElementById('live-title').textContent, error: document.getElementById('error').textContent,
                  ready: v.readyState, width: v.videoWidth, height: v.videoHeight, duration: v.duration, src: v.src}; })()""")
        expect(not state["error"], "the page shows an error: " + state["error"])
        if not seen or seen[-1] != state["progress"]:
            seen.append(state["progress"])
        if state["stage"] and (not stages or stages[-1] != state["stage"]):
            stages.append(state["stage"])
        if state["ready"] >= 2 and state["width"]:
            break
        time.sleep(0.05)
    else:
        raise CheckFailed("the video did not load in 120 s: progress %s, last state %s" % (seen, state))
    moving = [p for p in seen if 0 < p < 100]
    expect(len(set(moving)) >= 3, "the progress bar did not move: %s" % seen)
    expect(any("denoise" in s and "s/step" in s and "ETA" in s for s in stages), "no step line with s/step and ETA: %s" % stages)
    expect(state["width"] == 128 and state["height"] == 128 and abs(state["duration"] - 56 / 24) < 0.1,
           "the video element: %s" % state)
    expect(state["src"].startswith("blob:") if key else state["src"].endswith("/content"), "the video's source: %s" % state["src"])
    rows = devtools.evaluate("document.getElementById('jobs').textContent")
    expect("completed" in rows and prompt[:40] in rows, "the queue table does not show the job: %r" % rows[:300])
    shot = devtools.call("Page.captureScreenshot", format="png")
    with open(screenshot, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    return "%d progress values seen %s..%s, steps line %r, video %dx%d %.2f s ready in %.1f s; screenshot %s" % (
        len(seen), moving[0], moving[-1], [s for s in stages if "denoise" in s][-1], state["width"], state["height"],
        state["duration"], time.time() - t0, screenshot)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orochi", default=os.path.join(root, "build", "orochi"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--screenshot", default=tempfile.gettempdir(), help="folder for the screenshots (not the repo)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="orochi_check_page_")
    processes = []
    try:
        for key in ("", "page-key-" + uuid.uuid4().hex[:8]):
            server, port = start_server(args.orochi, work, key)
            processes.append(server)
            browser, devtools = start_chromium(args.chromium, work)
            processes.append(browser)
            shot = os.path.join(args.screenshot, "orochi_serve_page%s.png" % ("_key" if key else ""))
            print("ok (%s): %s" % ("with --api-key" if key else "no key", check_page(devtools, port, key, shot)), flush=True)
            browser.terminate()
            server.terminate()
            browser.wait(timeout=30)
            server.wait(timeout=30)
    except CheckFailed as e:
        print("check_serve_page: FAILED: %s" % e, file=sys.stderr)
        return 1
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)
    print("check_serve_page: the page submits, shows progress and plays the video")
    return 0


if __name__ == "__main__":
    sys.exit(main())
