// A fresh folder under the system temp dir for one test, removed with everything in it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <iterator>
#include <random>
#include <string>

namespace orochi::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag = "test") {
    path = std::filesystem::temp_directory_path() /
           ("orochi_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  size_t entries() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path), std::filesystem::directory_iterator()));
  }
};

}  // namespace orochi::testing
