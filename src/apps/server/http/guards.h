// What every request meets before a route: the API key, the body's size and framing, and the
// server-wide settings that bound what a client can hold (threads, keep-alive, payload).
//
//   - --api-key: every route but GET / (the page, constant HTML) and GET /health needs
//     `Authorization: Bearer KEY`; refused with 401 before any body is read.
//   - A request with a body must say its length (Content-Length; chunked bodies get 411), and a
//     length over the limit (JSON 1 MiB, multipart --max-upload-mb) gets 413 at once, before any
//     of it is read; so does `Expect: 100-continue` (curl's large uploads), which then never sends it.
//   - One request per connection: after each response the connection closes, so a refused body is
//     never read as the next request, and no idle connection holds a server thread.
#pragma once

#include <httplib.h>

#include "apps/server/http/server_context.h"

namespace orochi::apps::server {

void install_guards(httplib::Server& http, ServerContext& ctx);

}  // namespace orochi::apps::server
