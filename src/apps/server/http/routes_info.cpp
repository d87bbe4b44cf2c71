#include "apps/server/http/http_util.h"
#include "apps/server/http/page.h"
#include "apps/server/http/routes.h"

namespace orochi::apps::server {

void add_info_routes(httplib::Server& http, ServerContext& ctx) {
  http.Get("/", [](const httplib::Request& req, httplib::Response& res) {
    take_ranges(req);
    res.set_header("Cache-Control", "no-store");
    // The page's own script and styles only; media from this server (or blobs fetched from it).
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; media-src 'self' blob:");
    res.set_content(kPageHtml, "text/html; charset=utf-8");
  });
  http.Get("/health", [](const httplib::Request& req, httplib::Response& res) {
    take_ranges(req);
    send_json(res, 200, {{"status", "ok"}});
  });
  http.Get("/v1/models", [&ctx](const httplib::Request& req, httplib::Response& res) {
    take_ranges(req);
    nlohmann::json model = ctx.model;
    const JobQueue::Counts counts = ctx.queue.counts();
    model["queue"] = {{"queued", counts.queued}, {"running", counts.running}, {"max_queued", ctx.queue.max_queued()}};
    send_json(res, 200, {{"object", "list"}, {"data", nlohmann::json::array({model})}});
  });
}

}  // namespace orochi::apps::server
