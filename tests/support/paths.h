// Where the tests find their committed data and the orochi binary. The build bakes in absolute
// paths; OROCHI_TEST_DATA_DIR / OROCHI_BINARY override them when the binaries run elsewhere (the
// GPU machine gets the build carried to another folder).
#pragma once

#include <string>

namespace orochi::testing {

std::string test_data_dir();
std::string orochi_binary();

}  // namespace orochi::testing
