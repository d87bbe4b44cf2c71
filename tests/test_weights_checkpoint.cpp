// Checkpoint (single file, folder, sharded index), ModelFolder and check_key_set.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "support/temp_dir.h"
#include "core/log.h"
#include "weights/checkpoint.h"
#include "weights/model_folder.h"
#include "weights/safetensors_writer.h"

namespace orochi::weights {
namespace {

using orochi::testing::TempDir;

namespace fs = std::filesystem;


void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// One f32 tensor per name, value = index in `names` + `base`.
void write_shard(const std::string& path, const std::vector<std::string>& names, float base = 0) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (size_t i = 0; i < names.size(); ++i)
    tensors.emplace_back(names[i], Tensor::from_floats({base + static_cast<float>(i), 0}, {2}));
  ASSERT_TRUE(write_safetensors(path, tensors).is_ok());
}

// Three shards and an index placing a.*, b.*, c.* in shards 1, 2, 3.
std::string write_sharded(const TempDir& dir, const std::string& extra_index_entries = "") {
  write_shard(dir.file("m-00001-of-00003.safetensors"), {"a.weight", "a.bias"}, 10);
  write_shard(dir.file("m-00002-of-00003.safetensors"), {"b.weight"}, 20);
  write_shard(dir.file("m-00003-of-00003.safetensors"), {"c.weight", "c.bias"}, 30);
  const std::string index = dir.file("m.safetensors.index.json");
  write_text(index, R"({"metadata": {"total_size": 40}, "weight_map": {
      "a.weight": "m-00001-of-00003.safetensors", "a.bias": "m-00001-of-00003.safetensors",
      "b.weight": "m-00002-of-00003.safetensors",
      "c.weight": "m-00003-of-00003.safetensors", "c.bias": "m-00003-of-00003.safetensors")" +
                        extra_index_entries + "}}");
  return index;
}

void expect_error(const Status& s, ErrorCode code, const std::vector<std::string>& needles) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const auto& n : needles) EXPECT_NE(s.message().find(n), std::string::npos) << s.to_string();
}

TEST(Checkpoint, SingleFile) {
  TempDir dir{"ckpt"};
  write_shard(dir.file("w.safetensors"), {"z", "a"}, 1);
  const auto ckpt = Checkpoint::open(dir.file("w.safetensors"));
  ASSERT_TRUE(ckpt.has_value()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->names(), (std::vector<std::string>{"a", "z"}));
  EXPECT_EQ(ckpt->size(), 2u);
  EXPECT_EQ(ckpt->total_bytes(), 16u);
  EXPECT_EQ(ckpt->path(), dir.file("w.safetensors"));
  EXPECT_EQ(ckpt->files(), std::vector<std::string>{dir.file("w.safetensors")});
  EXPECT_TRUE(ckpt->contains("a"));
  ASSERT_NE(ckpt->info("z"), nullptr);
  EXPECT_EQ(ckpt->info("z")->shape, Shape{2});
  EXPECT_EQ(ckpt->info("q"), nullptr);
  const auto z = ckpt->get("z");
  ASSERT_TRUE(z.has_value());
  EXPECT_EQ(z->data<float>()[0], 1.0f);
}

TEST(Checkpoint, FolderOfFilesInNameOrder) {
  TempDir dir{"ckpt"};
  write_shard(dir.file("b.safetensors"), {"y"});
  write_shard(dir.file("a.safetensors"), {"x"});
  write_text(dir.file("config.json"), "{}");
  const auto ckpt = Checkpoint::open(dir.path.string());
  ASSERT_TRUE(ckpt.has_value()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->files(), (std::vector<std::string>{dir.file("a.safetensors"), dir.file("b.safetensors")}));
  EXPECT_EQ(ckpt->names(), (std::vector<std::string>{"x", "y"}));
}

TEST(Checkpoint, ShardedIndexWithThreeShards) {
  TempDir dir{"ckpt"};
  const std::string index = write_sharded(dir);
  for (const std::string& path : {index, dir.path.string()}) {  // the index, or its folder
    const auto ckpt = Checkpoint::open(path);
    ASSERT_TRUE(ckpt.has_value()) << ckpt.status().to_string();
    EXPECT_EQ(ckpt->path(), index);
    EXPECT_EQ(ckpt->files().size(), 3u);
    EXPECT_EQ(ckpt->size(), 5u);
    EXPECT_EQ(ckpt->get("b.weight")->data<float>()[0], 20.0f);
    EXPECT_EQ(ckpt->get("c.bias")->data<float>()[0], 31.0f);
  }
}

TEST(Checkpoint, FolderPrefersTheIndexOverStrayFiles) {
  TempDir dir{"ckpt"};
  write_sharded(dir);
  write_shard(dir.file("zz-stray.safetensors"), {"a.weight"});  // would clash if opened
  const auto ckpt = Checkpoint::open(dir.path.string());
  ASSERT_TRUE(ckpt.has_value()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->files().size(), 3u);
}

TEST(Checkpoint, MissingShard) {
  TempDir dir{"ckpt"};
  const std::string index = write_sharded(dir);
  fs::remove(dir.file("m-00002-of-00003.safetensors"));
  const auto ckpt = Checkpoint::open(index);
  ASSERT_FALSE(ckpt.has_value());
  expect_error(ckpt.status(), ErrorCode::kNotFound, {"m-00002-of-00003.safetensors", index});
}

TEST(Checkpoint, IndexNamesATensorItsShardLacks) {
  TempDir dir{"ckpt"};
  const std::string index =
      write_sharded(dir, R"(, "d.weight": "m-00002-of-00003.safetensors")");
  const auto ckpt = Checkpoint::open(index);
  ASSERT_FALSE(ckpt.has_value());
  expect_error(ckpt.status(), ErrorCode::kCorruptFile, {"'d.weight'", "m-00002-of-00003.safetensors"});
}

TEST(Checkpoint, TensorInTwoShards) {
  TempDir dir{"ckpt"};
  const std::string index = write_sharded(dir);
  write_shard(dir.file("m-00002-of-00003.safetensors"), {"b.weight", "c.bias"});
  const auto ckpt = Checkpoint::open(index);
  ASSERT_FALSE(ckpt.has_value());
  expect_error(ckpt.status(), ErrorCode::kCorruptFile,
               {"'c.bias'", "m-00002-of-00003.safetensors", "m-00003-of-00003.safetensors"});
}

TEST(Checkpoint, TensorInTwoFilesOfAFolder) {
  TempDir dir{"ckpt"};
  write_shard(dir.file("model.safetensors"), {"w"});
  write_shard(dir.file("model.fp16.safetensors"), {"w"});
  const auto ckpt = Checkpoint::open(dir.path.string());
  ASSERT_FALSE(ckpt.has_value());
  expect_error(ckpt.status(), ErrorCode::kCorruptFile, {"'w'", "variant"});
}

TEST(Checkpoint, UnlistedShardTensorWarnsOnceAndLoads) {
  TempDir dir{"ckpt"};
  const std::string index = write_sharded(dir);
  write_shard(dir.file("m-00002-of-00003.safetensors"), {"b.weight", "extra1", "extra2"});
  ::testing::internal::CaptureStderr();
  const auto ckpt = Checkpoint::open(index);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(ckpt.has_value()) << ckpt.status().to_string();
  EXPECT_TRUE(ckpt->contains("extra2"));
  if (log_level() <= LogLevel::kWarn) {
    EXPECT_NE(err.find("2 tensor(s)"), std::string::npos) << err;
    EXPECT_EQ(err.find("warn"), err.rfind("warn")) << "warned more than once: " << err;
  }
}

TEST(Checkpoint, GetUnknownKeyNamesKeyAndCheckpoint) {
  TempDir dir{"ckpt"};
  write_shard(dir.file("w.safetensors"), {"a"});
  const auto ckpt = Checkpoint::open(dir.file("w.safetensors"));
  ASSERT_TRUE(ckpt.has_value());
  const auto t = ckpt->get("proj_out.weight");
  ASSERT_FALSE(t.has_value());
  expect_error(t.status(), ErrorCode::kNotFound, {"'proj_out.weight'", dir.file("w.safetensors")});
}

TEST(Checkpoint, BadPathsAndFolders) {
  TempDir dir{"ckpt"};
  expect_error(Checkpoint::open(dir.file("nope")).status(), ErrorCode::kNotFound, {"nope"});
  expect_error(Checkpoint::open(dir.path.string()).status(), ErrorCode::kNotFound,
               {"no weights", ".safetensors", "index.json"});
  write_text(dir.file("pytorch_model.bin"), "x");
  expect_error(Checkpoint::open(dir.path.string()).status(), ErrorCode::kNotFound, {"convert"});
  expect_error(Checkpoint::open(dir.file("pytorch_model.bin")).status(), ErrorCode::kUnsupported,
               {"pytorch_model.bin", "convert"});
  write_text(dir.file("pytorch_model.bin.index.json"), R"({"weight_map": {"w": "pytorch_model.bin"}})");
  expect_error(Checkpoint::open(dir.file("pytorch_model.bin.index.json")).status(),
               ErrorCode::kUnsupported, {"pytorch_model.bin"});
  write_text(dir.file("a.safetensors.index.json"), "{\"weight_map\": {}}");
  write_text(dir.file("b.safetensors.index.json"), "{\"weight_map\": {}}");
  expect_error(Checkpoint::open(dir.path.string()).status(), ErrorCode::kInvalidArgument,
               {"a.safetensors.index.json", "b.safetensors.index.json"});
  write_text(dir.file("bad.safetensors.index.json"), "{\"weight_map\": [");
  expect_error(Checkpoint::open(dir.file("bad.safetensors.index.json")).status(),
               ErrorCode::kCorruptFile, {"not valid JSON"});
  write_text(dir.file("nomap.safetensors.index.json"), "{\"metadata\": {}}");
  expect_error(Checkpoint::open(dir.file("nomap.safetensors.index.json")).status(),
               ErrorCode::kCorruptFile, {"weight_map"});
}

TEST(ModelFolder, OpensConfigAndWeights) {
  TempDir dir{"ckpt"};
  write_text(dir.file("config.json"), R"({"_class_name": "Test", "num_layers": 2})");
  write_shard(dir.file("diffusion_pytorch_model.safetensors"), {"proj_in.weight"});
  const auto folder = ModelFolder::open(dir.path.string());
  ASSERT_TRUE(folder.has_value()) << folder.status().to_string();
  EXPECT_EQ(folder->config["num_layers"], 2);
  EXPECT_TRUE(folder->weights.contains("proj_in.weight"));
  EXPECT_EQ(folder->path, dir.path.string());
}

TEST(ModelFolder, MissingOrBadConfig) {
  TempDir dir{"ckpt"};
  write_shard(dir.file("model.safetensors"), {"w"});
  expect_error(ModelFolder::open(dir.path.string()).status(), ErrorCode::kNotFound,
               {"config.json", "diffusers"});
  write_text(dir.file("config.json"), "{\"num_layers\": 2,}");
  expect_error(ModelFolder::open(dir.path.string()).status(), ErrorCode::kCorruptFile,
               {"config.json", "not valid JSON", "parse error"});
  write_text(dir.file("config.json"), "[1]");
  expect_error(ModelFolder::open(dir.path.string()).status(), ErrorCode::kCorruptFile, {"object"});
  expect_error(ModelFolder::open(dir.file("nope")).status(), ErrorCode::kNotFound, {"nope"});
}

TEST(CheckKeySet, MatchingSetsAreOk) {
  EXPECT_TRUE(check_key_set({"b", "a"}, {"a", "b"}, "vae").is_ok());
}

TEST(CheckKeySet, NamesUnknownAndMissingKeys) {
  const Status s = check_key_set({"foo.weight", "bar.bias", "x"}, {"x", "proj_in.weight"}, "transformer");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "transformer: 2 unknown keys (bar.bias, foo.weight), 1 missing key (proj_in.weight); "
            "is this the right model folder?");
  const Status only_missing = check_key_set({}, {"a"}, "vae");
  EXPECT_EQ(only_missing.message(), "vae: 1 missing key (a); is this the right model folder?");
}

TEST(CheckKeySet, ListsAtMostTenOfEach) {
  std::vector<std::string> present;
  for (int i = 0; i < 25; ++i) present.push_back("k" + std::to_string(100 + i));
  const Status s = check_key_set(present, {}, "text_encoder");
  EXPECT_NE(s.message().find("25 unknown keys (k100, "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("k109, ... 15 more)"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("k110"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace orochi::weights
