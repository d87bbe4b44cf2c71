#include "apps/server/http/guards.h"

#include <cstdio>
#include <exception>

#include "apps/server/auth.h"
#include "apps/server/http/http_util.h"

namespace orochi::apps::server {
namespace {

// The refusal a request gets before its body is read, if any.
std::optional<ApiError> refusal(const httplib::Request& req, const ServerContext& ctx) {
  const bool open_route = req.method == "GET" && (req.path == "/" || req.path == "/health");
  if (!ctx.config.api_key.empty() && !open_route &&
      !bearer_matches(req.get_header_value("Authorization"), ctx.config.api_key))
    return ApiError{401, "unauthorized",
                    req.has_header("Authorization")
                        ? "the API key is wrong: send the key the server was started with (--api-key) as "
                          "'Authorization: Bearer KEY'"
                        : "this server needs an API key: send 'Authorization: Bearer KEY' (the key given to "
                          "orochi serve --api-key)",
                    ""};
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH") return std::nullopt;
  if (req.has_header("Transfer-Encoding"))
    return ApiError{411, "length_required", "send the body with a Content-Length, not in chunks", ""};
  if (!req.has_header("Content-Length"))
    return ApiError{411, "length_required", "a request with a body needs a Content-Length header", ""};
  const std::string length_text = req.get_header_value("Content-Length");
  uint64_t length = 0;
  try {
    size_t used = 0;
    length = std::stoull(length_text, &used);
    if (used != length_text.size()) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    return ApiError{400, "invalid_request", "Content-Length is not a number", ""};
  }
  const bool multipart = req.get_header_value("Content-Type").rfind("multipart/form-data", 0) == 0;
  const uint64_t limit = multipart ? ctx.config.upload_max_bytes : kJsonBodyMaxBytes;
  if (length > limit)
    return ApiError{413, "body_too_large",
                    "the body is " + std::to_string(length) + " bytes; this server takes at most " +
                        std::to_string(limit) + " bytes in a " + (multipart ? "multipart upload (--max-upload-mb)" : "JSON body") +
                        (multipart ? ": send smaller reference files, or start the server with a larger limit"
                                   : ": reference files go in a multipart request"),
                    ""};
  return std::nullopt;
}

}  // namespace

void install_guards(httplib::Server& http, ServerContext& ctx) {
  http.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  http.set_keep_alive_max_count(1);
  http.set_payload_max_length(std::max<uint64_t>(ctx.config.upload_max_bytes, kJsonBodyMaxBytes));
  http.set_read_timeout(30, 0);
  http.set_write_timeout(30, 0);
  http.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (std::optional<ApiError> e = refusal(req, ctx)) {
      send_error(res, *e);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_expect_100_continue_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (std::optional<ApiError> e = refusal(req, ctx)) {
      send_error(res, *e);
      return e->http_status;
    }
    return 100;
  });
  // Unrouted requests (no such route, or a method it does not take).
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    take_ranges(req);
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // a route's own error
    if (res.status == 404)
      send_error(res, {404, "not_found",
                       "no route " + req.method + " " + req.path.substr(0, 100) +
                           ": the API is under /v1/videos and /v1/models (README.md, orochi help serve)",
                       ""});
    else
      send_error(res, {res.status, "http_error",
                       "HTTP " + std::to_string(res.status) + " for " + req.method + " " + req.path.substr(0, 100), ""});
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr e) {
    take_ranges(req);
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    std::fprintf(stderr, "orochi serve: internal error on %s %s: %s\n", req.method.c_str(), req.path.c_str(), what.c_str());
    send_error(res, {500, "server_error", "internal error (please report): " + what, ""});
  });
}

}  // namespace orochi::apps::server
