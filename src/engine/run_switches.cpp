#include "engine/run_switches.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "core/env.h"

namespace orochi::engine {
namespace {

struct Switch {
  SwitchInfo info;
  std::vector<std::string> choices;  // empty: free-form, checked by `set`
  std::function<Status(RunSwitches&, const std::string&)> set;
  std::function<std::string(const RunSwitches&)> get;
};

std::string joined(const std::vector<std::string>& words) {  // "a, b or c"
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

// A switch with a fixed set of values, each mapped onto the struct by `set`.
Switch choice(std::string name, std::string env, std::vector<std::string> choices, std::string about,
              std::function<void(RunSwitches&, const std::string&)> set,
              std::function<std::string(const RunSwitches&)> get) {
  Switch s{{std::move(name), std::move(env), joined(choices), std::move(about)}, choices, nullptr, std::move(get)};
  s.set = [set = std::move(set)](RunSwitches& r, const std::string& v) {
    set(r, v);
    return Status::ok();
  };
  return s;
}

// A switch of two values over one bool of backends::KernelOptions: `on` sets it, the other value
// of `choices` (listed in the order help shows them) clears it.
Switch kernel_flag(std::string name, std::string env, std::vector<std::string> choices, std::string about,
                   bool backends::KernelOptions::*field, std::string on) {
  const std::string off = choices[0] == on ? choices[1] : choices[0];
  return choice(std::move(name), std::move(env), std::move(choices), std::move(about),
                [field, on](RunSwitches& r, const std::string& v) { r.kernels.*field = v == on; },
                [field, on, off](const RunSwitches& r) { return r.kernels.*field ? on : off; });
}

const std::vector<Switch>& switches() {
  static const std::vector<Switch> table = [] {
    using K = backends::KernelOptions;
    std::vector<Switch> t;
    t.push_back(choice("kernels", "OROCHI_KERNELS", {"auto", "generic"},
                       "auto: Hopper's sm_90a kernels where the GPU has them; generic: the path of GPUs without",
                       [](RunSwitches& r, const std::string& v) { r.generic_kernels = v == "generic"; },
                       [](const RunSwitches& r) { return std::string(r.generic_kernels ? "generic" : "auto"); }));
    t.push_back(kernel_flag("attention", "OROCHI_ATTENTION", {"flash", "cudnn"},
                            "the denoiser's attention: Orochi's sm_90a kernel where it runs, or cuDNN everywhere",
                            &K::flash_attention, "flash"));
    t.push_back(choice("flash-kv-block", "OROCHI_FLASH_KV_BLOCK", {"192", "176", "128"},
                       "key rows per tile of the flash kernel",
                       [](RunSwitches& r, const std::string& v) { r.kernels.flash_kv_block = std::stoi(v); },
                       [](const RunSwitches& r) { return std::to_string(r.kernels.flash_kv_block); }));
    t.push_back(kernel_flag("flash-pingpong", "OROCHI_FLASH_PINGPONG", {"1", "0"},
                            "the flash kernel's two consumer warpgroups alternate their MMAs",
                            &K::flash_pingpong, "1"));
    t.push_back(kernel_flag("flash-split-tail", "OROCHI_FLASH_SPLIT_TAIL", {"1", "0"},
                            "the flash kernel splits a sparse last wave's units",
                            &K::flash_split_tail, "1"));
    t.push_back(kernel_flag("flash-rescale", "OROCHI_FLASH_RESCALE", {"lazy", "eager"},
                            "lazy: a row's running max moves only when a key tile raises it by more than 2^8",
                            &K::flash_lazy_rescale, "lazy"));
    t.push_back(kernel_flag("gemm", "OROCHI_GEMM", {"cublas", "sm90a"},
                            "the denoiser's linears: cuBLASLt, or Orochi's wgmma GEMM (experimental, slower)",
                            &K::gemm_sm90a, "sm90a"));
    t.push_back(kernel_flag("gemm-pick", "OROCHI_GEMM_PICK", {"timed", "heuristic"},
                            "cuBLASLt algorithm: the fastest of its top candidates timed once, or its first pick",
                            &K::gemm_timed_pick, "timed"));
    t.push_back(kernel_flag("qk-norm", "OROCHI_QK_NORM_KERNEL", {"rows", "items"},
                            "q/k norm + RoPE kernel: one block per row, or one warp per head",
                            &K::qk_norm_items, "items"));
    t.push_back(kernel_flag("fused-quant", "OROCHI_FUSED_QUANT", {"on", "off"},
                            "--precision fp8/int8: norms and SwiGLU write the next linear's per-token codes (off: a pass each)",
                            &K::fused_quantization, "on"));
    t.push_back(choice("attention-precision", "OROCHI_ATTENTION_PRECISION", {"auto", "bf16", "fp8"},
                       "the denoiser's attention GEMMs: auto (fp8 with --precision fp8, else bf16), bf16, or fp8 (sm_90a)",
                       [](RunSwitches& r, const std::string& v) {
                         using A = backends::AttentionPrecision;
                         r.kernels.attention_precision = v == "fp8" ? A::kFp8 : v == "bf16" ? A::kBf16 : A::kAuto;
                       },
                       [](const RunSwitches& r) {
                         using A = backends::AttentionPrecision;
                         const A a = r.kernels.attention_precision;
                         return std::string(a == A::kFp8 ? "fp8" : a == A::kBf16 ? "bf16" : "auto");
                       }));
    t.push_back(kernel_flag("fp8-gemm-accum", "OROCHI_FP8_GEMM_ACCUM", {"fast", "promoted"},
                            "--precision fp8: cuBLASLt's FP8 GEMMs leave their partial sums in the MMA (fast), or promote them to f32",
                            &K::fp8_gemm_fast_accum, "fast"));
    t.push_back(choice("fp8-attention-promote", "OROCHI_FP8_ATTENTION_PROMOTE", {"4", "2", "1", "0"},
                       "FP8 attention: P V summed in f32 after every 4, 2 or 1 key tiles, or only in the FP8 MMA's accumulator (0)",
                       [](RunSwitches& r, const std::string& v) { r.kernels.fp8_attention_promote_every = std::stoi(v); },
                       [](const RunSwitches& r) { return std::to_string(r.kernels.fp8_attention_promote_every); }));
    t.push_back(kernel_flag("fp8-attention-sums", "OROCHI_FP8_ATTENTION_SUMS", {"mma", "f32"},
                            "FP8 attention's softmax denominators: sums of P's e4m3 codes by an MMA, or f32 sums of the exponentials",
                            &K::fp8_attention_mma_sums, "mma"));
    t.push_back(choice("sp-qkv", "OROCHI_SP_QKV", {"auto", "gather", "heads"},
                       "how SP ranks bring q/k/v together: whichever moves fewer bytes, rows of x, or head chunks",
                       [](RunSwitches& r, const std::string& v) {
                         r.sp.qkv = v == "gather" ? dist::SpQkv::kGather : v == "heads" ? dist::SpQkv::kHeads : dist::SpQkv::kAuto;
                       },
                       [](const RunSwitches& r) {
                         return std::string(r.sp.qkv == dist::SpQkv::kGather ? "gather"
                                            : r.sp.qkv == dist::SpQkv::kHeads ? "heads" : "auto");
                       }));
    t.push_back(choice("sp-attention", "OROCHI_SP_ATTENTION", {"whole", "split"},
                       "SP attention over all rows at once, or one share of query rows at a time",
                       [](RunSwitches& r, const std::string& v) { r.sp.split_attention = v == "split"; },
                       [](const RunSwitches& r) { return std::string(r.sp.split_attention ? "split" : "whole"); }));
    t.push_back({{"sp-weights", "OROCHI_SP_WEIGHTS", "one relative speed per SP rank, e.g. 1,0.8 (empty: even)",
                  "SP rows split in proportion to the ranks' speeds (each within [0.5, 2] of their mean)"},
                 {},
                 [](RunSwitches& r, const std::string& v) -> Status {
                   OROCHI_ASSIGN_OR_RETURN(r.sp.row_weights, parse_number_list(v, "sp-weights"));
                   return Status::ok();
                 },
                 [](const RunSwitches& r) {
                   std::string s;
                   for (double w : r.sp.row_weights) {
                     char text[32];
                     std::snprintf(text, sizeof(text), "%g", w);
                     s += (s.empty() ? "" : ",") + std::string(text);
                   }
                   return s;
                 }});
    t.push_back({{"peer-pace", "OROCHI_PEER_PACE", "MB:US (1-4096 MB pieces, 0-10000 us gaps), or empty for off",
                  "copy-engine pushes in pieces with pauses between them (experimental)"},
                 {},
                 [](RunSwitches& r, const std::string& v) -> Status {
                   if (v.empty()) {
                     r.sp.pace = {};
                     return Status::ok();
                   }
                   auto bad = [&] {
                     return invalid_argument("peer-pace='" + v +
                                             "': expected MB:US, a piece size of 1-4096 MB and a gap of 0-10000 "
                                             "microseconds (for example 32:150), or empty for off");
                   };
                   const size_t colon = v.find(':');
                   if (colon == std::string::npos) return bad();
                   char* end = nullptr;
                   const long mb = std::strtol(v.c_str(), &end, 10);
                   if (end != v.c_str() + colon || mb < 1 || mb > 4096) return bad();
                   const char* us_text = v.c_str() + colon + 1;
                   const long us = std::strtol(us_text, &end, 10);
                   if (*us_text == '\0' || *end != '\0' || us < 0 || us > 10000) return bad();
                   r.sp.pace = {static_cast<size_t>(mb) << 20, static_cast<int>(us)};
                   return Status::ok();
                 },
                 [](const RunSwitches& r) {
                   return r.sp.pace.piece_bytes == 0 ? std::string()
                                                     : std::to_string(r.sp.pace.piece_bytes >> 20) + ":" +
                                                           std::to_string(r.sp.pace.gap_us);
                 }});
    t.push_back(choice("conditioner-precision", "OROCHI_CONDITIONER_PRECISION", {"bf16", "fp8", "int8"},
                       "the Qwen3-VL text stack's linears: bf16 (default, whatever --precision), or quantized at load",
                       [](RunSwitches& r, const std::string& v) { r.conditioner_precision = *parse_precision(v); },
                       [](const RunSwitches& r) { return std::string(precision_name(r.conditioner_precision)); }));
    return t;
  }();
  return table;
}

std::string switch_names() {
  std::vector<std::string> names;
  for (const Switch& s : switches()) names.push_back(s.info.name);
  return joined(names);
}

// OROCHI_* variables that are not run switches but are read elsewhere (core/log, io/mp4_program,
// tests/support, scripts/build.sh).
const std::vector<std::string> kOtherVariables = {"OROCHI_LOG", "OROCHI_FFMPEG", "OROCHI_TEST_DATA_DIR", "OROCHI_BINARY",
                                                  "OROCHI_BUILD_DIR", "OROCHI_CUDA"};

}  // namespace

const std::vector<SwitchInfo>& run_switch_table() {
  static const std::vector<SwitchInfo> infos = [] {
    std::vector<SwitchInfo> out;
    for (const Switch& s : switches()) out.push_back(s.info);
    return out;
  }();
  return infos;
}

Status set_run_switch(RunSwitches& r, std::string_view name, std::string_view value) {
  for (const Switch& s : switches()) {
    if (s.info.name != name) continue;
    const std::string v(value);
    if (!s.choices.empty()) {
      bool known = false;
      for (const std::string& c : s.choices) known |= c == v;
      if (!known) return invalid_argument("switch " + s.info.name + " must be " + s.info.values + ", got '" + v + "'");
    }
    OROCHI_RETURN_IF_ERROR(s.set(r, v));
    if (std::find(r.given.begin(), r.given.end(), s.info.name) == r.given.end()) r.given.push_back(s.info.name);
    return Status::ok();
  }
  return invalid_argument("unknown switch '" + std::string(name) + "'; the switches are " + switch_names());
}

Status set_run_switch(RunSwitches& r, std::string_view name_equals_value) {
  const size_t eq = name_equals_value.find('=');
  if (eq == std::string_view::npos)
    return invalid_argument("--set wants NAME=VALUE, got '" + std::string(name_equals_value) + "'; the switches are " +
                            switch_names());
  return set_run_switch(r, name_equals_value.substr(0, eq), name_equals_value.substr(eq + 1));
}

Status set_run_switches(RunSwitches& r, std::string_view list) {
  std::vector<std::string> pairs;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item(list.substr(start, comma - start));
    if (item.find('=') == std::string::npos && !pairs.empty()) pairs.back() += "," + item;
    else pairs.push_back(item);
    start = comma + 1;
  }
  for (const std::string& pair : pairs) OROCHI_RETURN_IF_ERROR(set_run_switch(r, pair));
  return Status::ok();
}

Expected<RunSwitches> run_switches_from_environment(RunSwitches base) {
  std::vector<std::string> known = kOtherVariables;
  for (const Switch& s : switches()) known.push_back(s.info.env);
  for (const std::string& name : env_names_with_prefix("OROCHI_")) {
    bool ok = false;
    for (const std::string& k : known) ok |= k == name;
    if (!ok) {
      std::vector<std::string> valid;
      for (const Switch& s : switches()) valid.push_back(s.info.env);
      return invalid_argument("unknown variable " + name + " in the environment (a typo?); the run switches are " +
                              joined(valid) + " (or --set NAME=VALUE); unset it");
    }
  }
  for (const Switch& s : switches()) {
    const std::optional<std::string> value = env_value(s.info.env.c_str());
    if (!value) continue;
    if (Status st = set_run_switch(base, s.info.name, *value); !st.is_ok())
      return Status(st.code(), s.info.env + " (the " + s.info.name + " switch): " + st.message());
  }
  return base;
}

nlohmann::json run_switches_json(const RunSwitches& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const Switch& s : switches()) j[s.info.name] = s.get(r);
  return j;
}

Expected<std::vector<double>> parse_number_list(std::string_view text, const std::string& what) {
  std::vector<double> out;
  if (text.empty()) return out;
  const std::string value(text);
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    const std::string item = value.substr(start, comma - start);
    char* end = nullptr;
    const double d = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(d) || d <= 0)
      return invalid_argument(what + "='" + value + "': expected positive numbers separated by commas, e.g. 1,0.8");
    out.push_back(d);
    start = comma + 1;
  }
  return out;
}

}  // namespace orochi::engine
