#include "support/paths.h"

#include <cstdlib>

namespace orochi::testing {

std::string test_data_dir() {
  const char* env = std::getenv("OROCHI_TEST_DATA_DIR");
  return env && *env ? env : OROCHI_TEST_DATA_DIR;
}

std::string orochi_binary() {
  const char* env = std::getenv("OROCHI_BINARY");
  return env && *env ? env : OROCHI_BINARY_PATH;
}

}  // namespace orochi::testing
