// `orochi inspect [PATH] [--json]`: what a checkpoint holds, from its headers alone, and whether it
// matches its config.json: the keys and every tensor's shape and dtype, checked as loading checks them.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "apps/commands.h"
#include "core/format.h"
#include "models/h3/checkpoint_layout.h"
#include "models/h3/summary.h"
#include "weights/model_folder.h"

namespace orochi::apps {
namespace {

nlohmann::json summary_json(const h3::ParamSummary& s) {
  nlohmann::json groups = nlohmann::json::object();
  auto stats = [](const h3::GroupStats& g) {
    nlohmann::json dt = nlohmann::json::object();
    for (const auto& [d, n] : g.params_by_dtype) dt[dtype_name(d)] = n;
    return nlohmann::json{{"params", g.params}, {"bytes", g.bytes}, {"params_by_dtype", dt}};
  };
  for (const auto& [group, g] : s.groups) groups[h3::param_group_name(group)] = stats(g);
  return {{"groups", groups}, {"total", stats(s.total)}};
}

void print_summary(const h3::ParamSummary& s) {
  std::printf("  %-11s %12s %12s  %s\n", "group", "params", "bytes", "dtypes");
  auto row = [](const char* name, const h3::GroupStats& g) {
    std::string dtypes;
    for (const auto& [d, n] : g.params_by_dtype)
      dtypes += std::string(dtypes.empty() ? "" : ", ") + dtype_name(d) + " " + format_count(n);
    std::printf("  %-11s %12s %12s  %s\n", name, format_count(g.params).c_str(),
                format_bytes(g.bytes).c_str(), dtypes.c_str());
  };
  for (h3::ParamGroup group : h3::kAllParamGroups) {
    auto it = s.groups.find(group);
    if (it != s.groups.end()) row(h3::param_group_name(group), it->second);
  }
  row("total", s.total);
}

int inspect_demo(bool json) {
  const h3::H3Config config = h3::H3Config::tiny_demo();
  const h3::ParamSummary s = h3::summarize_config(config, DType::kF32);
  if (json) {
    std::printf("%s\n", nlohmann::json{{"model", "minimax-h3 (built-in tiny demo, random weights)"},
                                       {"summary", summary_json(s)}}.dump(2).c_str());
    return 0;
  }
  std::printf("MiniMax-H3 transformer: built-in tiny demo model (random weights, not a real checkpoint)\n");
  std::printf("%s", config.summary().c_str());
  print_summary(s);
  return 0;
}

}  // namespace

int run_inspect(const std::vector<std::string>& argv) {
  Expected<Args> args = Args::parse(argv, {}, {"json"});
  if (!args) return fail(args.status());
  const bool json = args->has("json");
  if (args->positionals().empty()) return inspect_demo(json);
  if (args->positionals().size() > 1) return fail(usage_error("inspect takes one PATH, got " + std::to_string(args->positionals().size())));
  const std::string path = args->positionals()[0];

  Expected<weights::ModelFolder> folder = weights::ModelFolder::open(path);
  if (!folder) return fail(folder.status());
  Expected<h3::H3Config> config = h3::H3Config::from_json(folder->config);
  if (!config) return fail(config.status().with_context(path));
  Expected<h3::KeyLayout> layout = h3::detect_key_layout(folder->weights);
  if (!layout) return fail(layout.status());
  const Status keys = h3::check_checkpoint_keys(folder->weights, *layout, *config);
  const Status shapes = h3::check_parameter_shapes(folder->weights, *layout, *config);
  const h3::ParamSummary s = h3::summarize_checkpoint(folder->weights, layout->prefix);

  if (json) {
    nlohmann::json j{{"model", "minimax-h3"},
                     {"path", path},
                     {"names", layout->describe()},
                     {"files", folder->weights.files()},
                     {"config", folder->config},
                     {"summary", summary_json(s)},
                     {"key_check", keys.is_ok() ? "ok" : keys.message()},
                     {"shape_check", shapes.is_ok() ? "ok" : shapes.message()}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("MiniMax-H3 transformer: %s\n", path.c_str());
    std::printf("  %zu tensors in %zu file(s), %s\n", folder->weights.size(), folder->weights.files().size(),
                layout->describe().c_str());
    std::printf("%s", config->summary().c_str());
    print_summary(s);
  }
  if (!keys.is_ok()) return fail(keys);
  if (!shapes.is_ok()) return fail(shapes.with_context(path));
  return 0;
}

}  // namespace orochi::apps
