// A copy of a checkpoint folder with every tensor converted to another dtype (config.json and one
// safetensors file), for tests of loaders that keep the stored dtype.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "weights/checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi::testing {

inline void write_converted_copy(const std::string& folder, const std::filesystem::path& to, DType dtype) {
  Expected<weights::Checkpoint> ckpt = weights::Checkpoint::open(folder);
  ASSERT_TRUE(ckpt.has_value()) << ckpt.status().to_string();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : ckpt->names()) {
    Expected<Tensor> t = ckpt->get(name);
    ASSERT_TRUE(t.has_value()) << name;
    tensors.emplace_back(name, t->to(dtype));
  }
  std::filesystem::copy_file(std::filesystem::path(folder) / "config.json", to / "config.json");
  ASSERT_TRUE(weights::write_safetensors((to / "model.safetensors").string(), tensors).is_ok());
}

}  // namespace orochi::testing
