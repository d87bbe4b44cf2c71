// The routes of `orochi serve` (README.md has a curl example of each):
//   POST   /v1/videos               a job (JSON, or multipart with reference files)
//   GET    /v1/videos               the jobs, newest first (after, limit, order)
//   GET    /v1/videos/{id}          one job
//   GET    /v1/videos/{id}/content  its MP4 (byte ranges)
//   GET    /v1/videos/{id}/events   server-sent events: status, progress (stage, step i/N, s/step, ETA), done
//   DELETE /v1/videos/{id}          cancel a queued or running job; delete a finished one
//   GET    /v1/models, GET /health, GET / (the page)
#pragma once

#include <httplib.h>

#include "apps/server/http/server_context.h"

namespace orochi::apps::server {

void add_video_routes(httplib::Server& http, ServerContext& ctx);
void add_info_routes(httplib::Server& http, ServerContext& ctx);

}  // namespace orochi::apps::server
