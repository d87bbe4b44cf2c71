#include "apps/serve_options.h"

#include <filesystem>
#include <fstream>

#include "apps/args.h"
#include "apps/model_source_options.h"
#include "apps/request_limits.h"

namespace orochi::apps {

Expected<ServeOptions> parse_serve_options(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"host", "port", "api-key", "api-key-file", "jobs-dir", "media-root", "lora-dir",
                                  "queue-max", "max-upload-mb", "crf"};
  std::set<std::string> flags = {"quiet"}, repeatable;
  add_model_source_options(valued, flags, repeatable);
  add_engine_options(valued);
  OROCHI_ASSIGN_OR_RETURN(Args args, Args::parse(argv, valued, flags, repeatable));
  ServeOptions o;
  o.quiet = args.has("quiet");
  OROCHI_ASSIGN_OR_RETURN(o.source, parse_model_source(args, "serve"));
  OROCHI_ASSIGN_OR_RETURN(o.engine, parse_engine_cli(args, o.quiet, "orochi serve"));
  server::ServerConfig& s = o.server;
  s.host = args.get("host", "127.0.0.1");
  if (s.host.empty()) return usage_error("--host needs an address, e.g. 127.0.0.1");
  OROCHI_ASSIGN_OR_RETURN(const int64_t port, args.get_int("port", 8000, 0, 65535));
  s.port = static_cast<int>(port);
  if (args.has("api-key") && args.has("api-key-file")) return usage_error("give --api-key or --api-key-file, not both");
  s.api_key = args.get("api-key", "");
  if (args.has("api-key") && s.api_key.empty()) return usage_error("--api-key needs a key");
  if (args.has("api-key-file")) {
    const std::string file = args.get("api-key-file", "");
    std::ifstream in(file);
    if (!in || !std::getline(in, s.api_key))
      return invalid_argument("--api-key-file " + file + " cannot be read (it holds the key on its first line)");
    while (!s.api_key.empty() && (s.api_key.back() == '\r' || s.api_key.back() == ' ')) s.api_key.pop_back();
    if (s.api_key.empty()) return invalid_argument("--api-key-file " + file + ": its first line is empty");
  }
  s.jobs_dir = args.get("jobs-dir", "orochi-jobs");
  if (s.jobs_dir.empty()) return usage_error("--jobs-dir needs a folder");
  if (args.has("media-root")) s.media_root = args.get("media-root", "");
  if (args.has("lora-dir")) {
    s.lora_dir = args.get("lora-dir", "");
    std::error_code ec;
    if (!std::filesystem::is_directory(*s.lora_dir, ec))
      return invalid_argument("--lora-dir " + *s.lora_dir + ": not a folder (its .safetensors LoRAs are offered to requests)");
  }
  OROCHI_ASSIGN_OR_RETURN(const int64_t queue_max, args.get_int("queue-max", 16, 1, 100000));
  s.queue_max = static_cast<size_t>(queue_max);
  OROCHI_ASSIGN_OR_RETURN(const int64_t upload_mb, args.get_int("max-upload-mb", 256, 1, 1 << 20));
  s.upload_max_bytes = static_cast<uint64_t>(upload_mb) << 20;
  OROCHI_ASSIGN_OR_RETURN(const int64_t crf, args.get_int("crf", 18, limits::kCrfMin, limits::kCrfMax));
  s.crf = static_cast<int>(crf);
  return o;
}

}  // namespace orochi::apps
