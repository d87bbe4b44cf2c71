#include "apps/server/lora_catalog.h"

#include <algorithm>
#include <filesystem>

namespace orochi::apps::server {

Expected<std::vector<OfferedLora>> offered_loras(const std::vector<engine::LoraSource>& at_start,
                                                 const std::optional<std::string>& dir) {
  namespace fs = std::filesystem;
  std::vector<OfferedLora> out;
  auto add = [&](OfferedLora l) -> Status {
    for (const OfferedLora& o : out)
      if (o.name == l.name && fs::weakly_canonical(o.path) != fs::weakly_canonical(l.path))
        return invalid_argument("two LoRAs are named '" + l.name + "' (" + o.path + " and " + l.path +
                                "): a request names a LoRA by its file name, so rename one");
      else if (o.name == l.name)
        return Status::ok();  // a --lora file inside --lora-dir: offered once, at its --lora strength
    out.push_back(std::move(l));
    return Status::ok();
  };
  for (const engine::LoraSource& l : at_start)
    OROCHI_RETURN_IF_ERROR(add({fs::path(l.path).stem().string(), l.path, l.strength, true}));
  if (!dir) return out;
  std::error_code ec;
  if (!fs::is_directory(*dir, ec)) return not_found("--lora-dir " + *dir + ": not a folder");
  std::vector<fs::path> files;
  for (fs::directory_iterator it(*dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors" && it->is_regular_file(ec)) files.push_back(it->path());
  if (ec) return io_error("--lora-dir " + *dir + " cannot be listed: " + ec.message());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) OROCHI_RETURN_IF_ERROR(add({f.stem().string(), f.string(), 1.0f, false}));
  return out;
}

std::string offered_names(const std::vector<OfferedLora>& offered) {
  std::string list;
  for (const OfferedLora& l : offered) list += (list.empty() ? "" : ", ") + l.name;
  return list.empty() ? "none" : list;
}

}  // namespace orochi::apps::server
