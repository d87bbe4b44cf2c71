// GET /: one page to use the server from a browser, served by orochi itself, no framework: a prompt
// form (with keyframe and reference uploads where the model has those workflows built), the queue,
// the running job's progress from its event stream (stage, step i/N, s/step, ETA) and the finished
// video in a <video> element. With --api-key it asks for the key and sends it as a bearer token on
// every call (the event stream and the video are fetched with it too).
#pragma once

namespace orochi::apps::server {

extern const char* const kPageHtml;

}  // namespace orochi::apps::server
