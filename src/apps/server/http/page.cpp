#include "apps/server/http/page.h"

namespace orochi::apps::server {

const char* const kPageHtml = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>orochi serve</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 60em; padding: 0 1em; color: #222; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; } h2 { font-size: 1.05em; margin: 1.2em 0 .4em; }
  #model { color: #666; margin-bottom: 1em; }
  form { display: grid; grid-template-columns: 9em 1fr; gap: .4em .8em; align-items: center; }
  textarea { width: 100%; height: 4em; } input[type=text], input[type=number] { width: 12em; }
  .wide { grid-column: 1 / 3; } .hidden { display: none; }
  #error { color: #b00; white-space: pre-wrap; }
  table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: .25em .5em; border-bottom: 1px solid #ddd; }
  progress { width: 10em; } #live progress { width: 100%; }
  video { max-width: 100%; background: #000; margin-top: .5em; }
  button.link { border: none; background: none; color: #06c; cursor: pointer; padding: 0; }
</style>
</head>
<body>
<h1>orochi serve</h1>
<div id="model">loading the model's description...</div>
<form id="form">
  <label for="key" id="key-label" class="hidden">API key</label><input id="key" type="password" class="hidden" autocomplete="off">
  <label for="prompt">Prompt</label><textarea id="prompt" required>A red fox runs through fresh snow at dawn.</textarea>
  <label for="size">Size (WxH)</label><input id="size" type="text" placeholder="the model's default">
  <label for="frames">Frames</label><input id="frames" type="number" min="5" step="17" placeholder="17n + 5">
  <label for="steps">Steps</label><input id="steps" type="number" min="1" placeholder="the model's default">
  <label for="seed">Seed</label><input id="seed" type="number" min="0" value="0">
  <label for="image" class="fl2va hidden">First frame</label><input id="image" type="file" accept="image/*" class="fl2va hidden">
  <label for="last_image" class="fl2va hidden">Last frame</label><input id="last_image" type="file" accept="image/*" class="fl2va hidden">
  <label for="reference" class="ref2va hidden">References</label><input id="reference" type="file" multiple accept="image/*,video/*,audio/*" class="ref2va hidden">
  <span></span><span><button id="submit" type="submit">Generate</button></span>
  <div id="error" class="wide"></div>
</form>
<h2>Running</h2>
<div id="live">
  <div id="live-title">nothing running</div>
  <progress id="progress" max="100" value="0"></progress>
  <div id="stage"></div>
</div>
<h2>Video</h2>
<div id="video-title">no video yet</div>
<video id="player" controls playsinline></video>
<h2>Jobs</h2>
<table><thead><tr><th>id</th><th>status</th><th>progress</th><th>size</th><th>frames</th><th>prompt</th><th></th></tr></thead><tbody id="jobs"></tbody></table>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let key = sessionStorage.getItem("orochi-key") || "";
let watching = null, shown = null;

function auth() { return key ? { Authorization: "Bearer " + key } : {}; }
async function api(path, options = {}) {
  options.headers = Object.assign({}, options.headers || {}, auth());
  const response = await fetch(path, options);
  const body = await response.json().catch(() => null);
  if (response.status === 401) { showKey(); }
  if (!response.ok) throw new Error(body && body.error ? body.error.message : "HTTP " + response.status);
  return body;
}
function showKey() { for (const id of ["key", "key-label"]) $(id).classList.remove("hidden"); }
function text(s) { const d = document.createElement("span"); d.textContent = s == null ? "" : String(s); return d.innerHTML; }

async function loadModel() {
  try {
    const models = await api("/v1/models");
    const m = models.data[0];
    $("model").textContent = m.id + " on " + m.device + (m.demo ? " (the built-in demo model: random weights, noise-like video)" : "");
    for (const w of m.workflows) if (w.built) for (const e of document.getElementsByClassName(w.name)) e.classList.remove("hidden");
  } catch (e) { $("model").textContent = e.message; }
}

$("key").addEventListener("change", () => { key = $("key").value; sessionStorage.setItem("orochi-key", key); loadModel(); refresh(); });

$("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("error").textContent = "";
  const fields = { prompt: $("prompt").value };
  if ($("size").value) fields.size = $("size").value;
  if ($("frames").value) fields.frames = Number($("frames").value);
  if ($("steps").value) fields.steps = Number($("steps").value);
  if ($("seed").value) fields.seed = Number($("seed").value);
  const files = [["image", $("image")], ["last_image", $("last_image")], ["reference", $("reference")]]
    .flatMap(([name, input]) => Array.from(input.files).map((f) => [name, f]));
  let options;
  if (files.length) {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, typeof value === "string" ? value : JSON.stringify(value));
    for (const [name, f] of files) form.append(name, f, f.name);
    options = { method: "POST", body: form };
  } else {
    options = { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(fields) };
  }
  try {
    const video = await api("/v1/videos", options);
    watch(video.id);
    refresh();
  } catch (e) { $("error").textContent = e.message; }
});

// The job's server-sent events, read with fetch so that the API key goes along.
async function watch(id) {
  watching = id;
  $("live-title").textContent = id + ": queued";
  $("progress").value = 0; $("stage").textContent = "";
  try {
    const response = await fetch("/v1/videos/" + id + "/events", { headers: auth() });
    if (!response.ok) throw new Error("events: HTTP " + response.status);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end); buffer = buffer.slice(end + 2);
        let type = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) type = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (data) onEvent(id, type, JSON.parse(data));
      }
    }
  } catch (e) { $("error").textContent = e.message; }
  refresh();
}

function onEvent(id, type, data) {
  if (id !== watching) return;
  if (type === "progress") {
    $("progress").value = data.progress;
    const unit = data.stage === "denoise" ? "step" : data.stage === "video decode" ? "chunk" : "pass";
    let line = data.stage + " " + data.done + "/" + data.total;
    if (data.seconds_per_unit) line += ", " + data.seconds_per_unit.toFixed(2) + " s/" + unit;
    if (data.eta_seconds) line += ", ETA " + data.eta_seconds.toFixed(1) + " s";
    $("stage").textContent = line;
    $("live-title").textContent = id + ": in progress";
  } else {
    $("progress").value = data.progress;
    $("live-title").textContent = id + ": " + data.status + (data.error ? " (" + data.error.message + ")" : "");
    if (data.status === "completed") show(id);
  }
}

async function show(id) {
  shown = id;
  $("video-title").textContent = id;
  const url = "/v1/videos/" + id + "/content";
  if (!key) { $("player").src = url; return; }
  const response = await fetch(url, { headers: auth() });
  if (response.ok) $("player").src = URL.createObjectURL(await response.blob());
}

async function act(id, status) {
  try { await api("/v1/videos/" + id, { method: "DELETE" }); } catch (e) { $("error").textContent = e.message; }
  refresh();
}

async function refresh() {
  let list;
  try { list = await api("/v1/videos?limit=50"); } catch (e) { return; }
  const rows = list.data.map((v) => {
    const actions = [];
    if (v.status === "completed") actions.push('<button class="link" data-show="' + v.id + '">play</button>');
    actions.push('<button class="link" data-delete="' + v.id + '">' + (v.status === "queued" || v.status === "in_progress" ? "cancel" : "delete") + "</button>");
    return "<tr><td>" + text(v.id.slice(0, 14)) + "</td><td>" + text(v.status) + (v.queue_position ? " #" + v.queue_position : "") +
      '</td><td><progress max="100" value="' + v.progress + '"></progress></td><td>' + text(v.size) + "</td><td>" + text(v.frames) +
      "</td><td>" + text((v.prompt || "").slice(0, 40)) + "</td><td>" + actions.join(" ") + "</td></tr>";
  });
  $("jobs").innerHTML = rows.join("");
  for (const b of document.querySelectorAll("[data-show]")) b.onclick = () => show(b.dataset.show);
  for (const b of document.querySelectorAll("[data-delete]")) b.onclick = () => act(b.dataset.delete);
}

if (key) { $("key").value = key; showKey(); }
loadModel();
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
)html";

}  // namespace orochi::apps::server
