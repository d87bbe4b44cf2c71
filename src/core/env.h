// Switches read from the environment (OROCHI_ATTENTION, OROCHI_GEMM, the kernels' timing
// variants): a value outside the allowed set is an error that names the variable and the choices.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "core/status.h"

namespace orochi {

// The value of `name` when it is one of `allowed`; `fallback` when the variable is unset.
Expected<std::string> env_choice(const char* name, std::initializer_list<std::string_view> allowed,
                                 std::string_view fallback);

}  // namespace orochi
