// `orochi serve`'s start-up options (apps/serve_options.h parses them), and the server-wide bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace orochi::apps::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;                     // 0: any free port (printed when listening)
  std::string api_key;                 // empty: no key asked
  std::string jobs_dir = "orochi-jobs";
  std::optional<std::string> media_root;
  std::optional<std::string> lora_dir;  // its *.safetensors offered to requests (lora_catalog.h)
  size_t queue_max = 16;               // queued jobs (the running one not counted)
  uint64_t upload_max_bytes = 256ull << 20;  // a multipart request's whole body
  int crf = 18;
};

// Bodies other than uploads (JSON) are small: a request is a few hundred bytes.
inline constexpr uint64_t kJsonBodyMaxBytes = 1 << 20;
// Event streams open at once: each holds a server thread while it waits.
inline constexpr int kEventStreamsMax = 32;
// The server's threads: event streams, uploads and polling clients together.
inline constexpr int kServerThreads = kEventStreamsMax + 32;

}  // namespace orochi::apps::server
