// Video job ids: made by the server, never taken from a client, and checked on every route before
// they name a folder. "video_" and 32 lowercase hex digits (128 random bits): nothing in an id can
// climb out of the jobs folder or collide with the server's own names there.
#pragma once

#include <string>

namespace orochi::apps::server {

// A new id from the operating system's random source (std::random_device: getrandom/urandom).
std::string make_job_id();

// Exactly "video_" followed by 32 of [0-9a-f]; everything else (dots, slashes, capitals, another
// length) is refused.
bool is_valid_job_id(const std::string& id);

}  // namespace orochi::apps::server
