// The engine's options layer for run switches: every kernel variant and exchange scheme a run can
// take, in one table, parsed and checked once (an unknown name or value is an error that lists the
// valid ones), recorded in the stage report, and passed down as plain structs
// (backends::KernelOptions, dist::SequenceParallelOptions). Set from the command line
// (`--set NAME=VALUE`) or, for the device scripts' side-by-side timing, from the OROCHI_* variable
// each switch names: this file and core/env.cpp are the only places that read the environment.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "backends/kernel_options.h"
#include "core/precision.h"
#include "core/status.h"
#include "dist/parallel_options.h"

namespace orochi::engine {

struct RunSwitches {
  backends::KernelOptions kernels;
  dist::SequenceParallelOptions sp;
  // kernels=generic: only the kernels every supported GPU runs (cuDNN attention, cuBLASLt), as on a
  // GPU without Hopper's sm_90a instructions; how an H200 tests what a 3090 or 4090 runs.
  bool generic_kernels = false;
  // The Qwen3-VL conditioner's text-stack linears (conditioner-precision). bf16 by default whatever
  // --precision says: a lossy conditioner changes every token's features, which every denoiser
  // step then reads, for ~1-2% of a ref2va run's time; fp8 / int8 halve its weight bytes (what a
  // smaller GPU streams) and are asked for explicitly until measured within the bars.
  Precision conditioner_precision = Precision::kBf16;
  // The switches given (--set or the environment), by name: engine/gpu_capability.h refuses a
  // Hopper kernel that was asked for on another GPU, and turns off one that is only the default.
  std::vector<std::string> given;
};

struct SwitchInfo {
  std::string name;    // as --set takes it: "flash-kv-block"
  std::string env;     // the variable the device scripts set: "OROCHI_FLASH_KV_BLOCK"
  std::string values;  // what it takes, for help and errors: "128, 176 or 192"
  std::string about;   // one line
};
const std::vector<SwitchInfo>& run_switch_table();

// NAME=VALUE (or NAME and VALUE) into `switches`. Errors name the switch and list what is valid.
Status set_run_switch(RunSwitches& switches, std::string_view name, std::string_view value);
Status set_run_switch(RunSwitches& switches, std::string_view name_equals_value);

// --set's list: NAME=VALUE pairs separated by commas, where a comma followed by text without '='
// continues the previous value (values never contain '=': "sp-weights=1,0.8,attention=cudnn").
Status set_run_switches(RunSwitches& switches, std::string_view list);

// The table's variables that are set in the environment, applied over `base`. An OROCHI_* variable
// that is neither a switch nor one of the engine's other variables (OROCHI_LOG, OROCHI_FFMPEG, the
// test and build ones) is an error naming it and the valid ones: a typo never passes silently.
Expected<RunSwitches> run_switches_from_environment(RunSwitches base = {});

// Every switch with its value, for the report: {"flash-kv-block": "192", ...}.
nlohmann::json run_switches_json(const RunSwitches& switches);

// "1,0.8" -> {1, 0.8}: positive finite numbers (the per-rank checks need the layout: see
// h3::sp_weights_problem).
Expected<std::vector<double>> parse_number_list(std::string_view text, const std::string& what);

}  // namespace orochi::engine
