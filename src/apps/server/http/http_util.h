// Small helpers every route uses: JSON responses (errors as api_error.h words them), and taking
// byte ranges away from cpp-httplib. httplib 0.11.4 applies a request's Range to any routed
// response, JSON errors included, without checking it against the length; so every route takes
// the ranges off the request first and only GET /v1/videos/{id}/content honours them itself.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "apps/server/api_error.h"

namespace orochi::apps::server {

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, const ApiError& error);

// The request's parsed ranges, removed from it. The Request is the server's own (a local of
// httplib's request loop, handed to routes as const): clearing its ranges is what stops httplib
// from applying them.
httplib::Ranges take_ranges(const httplib::Request& req);

// The one byte range to send of a `size`-byte file, as [first, last], when `ranges` asks for one
// that the file can satisfy; nullopt with `unsatisfiable` set when it cannot (416), nullopt alone
// for "send it all" (no range, or several: a server may ignore a multi-range request).
std::optional<std::pair<uint64_t, uint64_t>> byte_range(const httplib::Ranges& ranges, uint64_t size,
                                                        bool& unsatisfiable);

}  // namespace orochi::apps::server
