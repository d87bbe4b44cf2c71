// The CLI's number formats are core's (core/format.h), which the engine's reports use too.
#pragma once

#include "core/format.h"

namespace orochi::apps {

using orochi::fnv1a_hex;
using orochi::format_bytes;
using orochi::format_count;

}  // namespace orochi::apps
