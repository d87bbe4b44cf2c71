// SafetensorsFile and write_safetensors: round trips, zero-copy views, and one test per validation
// rule, each on a file built by hand so the failure is exactly the one named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "support/temp_dir.h"
#include "weights/safetensors.h"
#include "weights/safetensors_writer.h"

namespace orochi::weights {
namespace {

using orochi::testing::TempDir;

namespace fs = std::filesystem;


std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// 8-byte little-endian length, `header` verbatim, then `data_bytes` zero bytes.
std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + data_bytes);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i)));
  for (char c : header) out.push_back(static_cast<uint8_t>(c));
  out.resize(out.size() + data_bytes, 0);
  return out;
}

Expected<std::shared_ptr<SafetensorsFile>> parse_bytes(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::parse(nullptr, bytes.data(), bytes.size(), "mem.safetensors");
}

// Parses `header` over `data_bytes` of data and expects `code` with `needle` in the message.
void expect_error(const std::string& header, size_t data_bytes, ErrorCode code,
                  const std::string& needle) {
  const auto file = parse_bytes(raw_file(header, data_bytes));
  ASSERT_FALSE(file.has_value()) << header;
  EXPECT_EQ(file.status().code(), code) << file.status().to_string();
  EXPECT_NE(file.status().message().find(needle), std::string::npos) << file.status().to_string();
  EXPECT_NE(file.status().message().find("mem.safetensors"), std::string::npos);
}

Tensor filled(const Shape& shape, DType dtype, int seed) {
  Tensor t = Tensor::empty(shape, dtype);
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(i * 31 + seed);
  return t;
}

TEST(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  TempDir dir{"st"};
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"a.f32", filled({2, 3}, DType::kF32, 1)},   {"b.bf16", filled({5}, DType::kBF16, 2)},
      {"c.f16", filled({1, 1, 3}, DType::kF16, 3)}, {"d.f8", filled({7}, DType::kF8E4M3, 4)},
      {"e.i64", filled({2}, DType::kI64, 5)},      {"empty", filled({0, 4}, DType::kF32, 6)},
      {"scalar", filled({}, DType::kF32, 7)},
  };
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "héllo"}};
  const std::string path = dir.file("rt.safetensors");
  ASSERT_TRUE(write_safetensors(path, tensors, meta).is_ok());
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  const auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.has_value()) << file.status().to_string();
  EXPECT_EQ((*file)->path(), path);
  EXPECT_EQ((*file)->metadata(), meta);
  EXPECT_EQ((*file)->tensors().size(), tensors.size());
  uint64_t total = 0;
  for (const auto& [name, expected] : tensors) {
    const TensorInfo* info = (*file)->find(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->dtype, expected.dtype()) << name;
    EXPECT_EQ(info->shape, expected.shape()) << name;
    const Tensor t = (*file)->tensor(*info);
    ASSERT_EQ(t.nbytes(), expected.nbytes()) << name;
    if (t.nbytes() > 0) {
      EXPECT_EQ(std::memcmp(t.raw_data(), expected.raw_data(), t.nbytes()), 0) << name;
    }
    total += info->nbytes();
  }
  EXPECT_EQ((*file)->data_bytes(), total);
  EXPECT_EQ((*file)->find("nope"), nullptr);
}

TEST(Safetensors, WriterPadsHeaderAndKeepsOrder) {
  TempDir dir{"st"};
  const std::string path = dir.file("order.safetensors");
  ASSERT_TRUE(write_safetensors(path, {{"z", filled({3}, DType::kF32, 0)},
                                       {"a", filled({2}, DType::kF32, 0)}})
                  .is_ok());
  const auto bytes = read_bytes(path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ(header_len % 8, 0u);
  const auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.has_value());
  ASSERT_EQ((*file)->tensors().size(), 2u);
  EXPECT_EQ((*file)->tensors()[0].name, "z");  // data order = the order given
  EXPECT_EQ((*file)->tensors()[1].begin, 12u);
}

TEST(Safetensors, TensorsAreZeroCopyAndOutliveTheFile) {
  TempDir dir{"st"};
  const std::string path = dir.file("zc.safetensors");
  const Tensor w = Tensor::from_floats({1, 2, 3, 4}, {2, 2});
  ASSERT_TRUE(write_safetensors(path, {{"pad", filled({2}, DType::kF32, 0)}, {"w", w}}).is_ok());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.has_value());
  const TensorInfo* info = (*file)->find("w");
  const Tensor t = (*file)->tensor(*info);
  EXPECT_EQ(static_cast<const uint8_t*>(t.raw_data()), (*file)->data_section() + info->begin);

  file.value().reset();  // drop the file object: the mapping must live on in t
  fs::remove(path);
  EXPECT_EQ(t.data<float>()[3], 4.0f);
}

TEST(Safetensors, MisalignedTensorIsCopiedToAlignedMemory) {
  TempDir dir{"st"};
  const std::string path = dir.file("unaligned.safetensors");
  const Tensor w = Tensor::from_floats({1.5f, -2.0f}, {2});
  ASSERT_TRUE(write_safetensors(path, {{"u8", filled({3}, DType::kU8, 0)}, {"w", w}}).is_ok());
  const auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.has_value());
  const TensorInfo* info = (*file)->find("w");
  ASSERT_EQ(info->begin, 3u);
  const Tensor t = (*file)->tensor(*info);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 4, 0u);
  EXPECT_EQ(t.data<float>()[0], 1.5f);
  EXPECT_EQ(t.data<float>()[1], -2.0f);
}

TEST(Safetensors, WriterRejectsBadRequestsAndUnwritablePaths) {
  TempDir dir{"st"};
  const Tensor t = filled({2}, DType::kF32, 0);
  const Status dup = write_safetensors(dir.file("d.safetensors"), {{"x", t}, {"x", t}});
  EXPECT_EQ(dup.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(write_safetensors(dir.file("u.safetensors"), {{"x", Tensor()}}).code(),
            ErrorCode::kInvalidArgument);
  const std::string bad = dir.file("no/such/folder/w.safetensors");
  const Status io = write_safetensors(bad, {{"x", t}});
  EXPECT_EQ(io.code(), ErrorCode::kIo);
  EXPECT_NE(io.message().find(bad), std::string::npos) << io.message();
  EXPECT_TRUE(fs::is_empty(dir.path));  // nothing half-written anywhere
}

TEST(Safetensors, EveryTruncationFailsCleanly) {
  TempDir dir{"st"};
  const std::string path = dir.file("t.safetensors");
  ASSERT_TRUE(write_safetensors(path, {{"a", filled({3}, DType::kBF16, 0)},
                                       {"b", filled({2}, DType::kF32, 0)}},
                                {{"k", "v"}})
                  .is_ok());
  const auto bytes = read_bytes(path);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + cut);
    const auto file = SafetensorsFile::parse(nullptr, prefix.data(), prefix.size(), "cut");
    ASSERT_FALSE(file.has_value()) << "cut at " << cut;
    EXPECT_EQ(file.status().code(), ErrorCode::kCorruptFile) << "cut at " << cut;
  }
  // The same through open() on disk, at a few representative cuts.
  for (size_t cut : {size_t{0}, size_t{5}, size_t{8}, size_t{20}, bytes.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(cut));
    const auto file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.has_value()) << "cut at " << cut;
    EXPECT_EQ(file.status().code(), ErrorCode::kCorruptFile);
    EXPECT_NE(file.status().message().find("truncated"), std::string::npos)
        << file.status().message();
  }
}

TEST(Safetensors, HeaderLengthBeyondTheFile) {
  auto bytes = raw_file("{}", 0);
  bytes[0] = 200;  // claims 200 header bytes, 2 follow
  const auto file = parse_bytes(bytes);
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.status().code(), ErrorCode::kCorruptFile);
  EXPECT_NE(file.status().message().find("header length"), std::string::npos);
}

TEST(Safetensors, AbsurdHeaderLength) {
  auto bytes = raw_file("{}", 0);
  bytes[5] = 1;  // 2^40 bytes
  const auto file = parse_bytes(bytes);
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.status().code(), ErrorCode::kCorruptFile);
  EXPECT_NE(file.status().message().find("100 MiB"), std::string::npos);
}

TEST(Safetensors, HeaderIsNotJsonOrNotAnObject) {
  expect_error("{\"a\": ", 0, ErrorCode::kCorruptFile, "not valid JSON");
  expect_error("{\"a\": 1} trailing", 0, ErrorCode::kCorruptFile, "not valid JSON");
  expect_error("[1, 2]", 0, ErrorCode::kCorruptFile, "must be a JSON object");
  expect_error("{\"a\": \"\xff\"}", 0, ErrorCode::kCorruptFile, "not valid JSON");  // bad UTF-8
  expect_error("{\"w\": 3}", 0, ErrorCode::kCorruptFile, "'w': entry must be an object");
}

TEST(Safetensors, MetadataMustMapStringsToStrings) {
  expect_error(R"({"__metadata__": {"a": 1}})", 0, ErrorCode::kCorruptFile, "'a' must be a string");
  expect_error(R"({"__metadata__": [1]})", 0, ErrorCode::kCorruptFile, "__metadata__");
}

TEST(Safetensors, UnknownDtypeSaysWhich) {
  expect_error(R"({"w": {"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 2]}})", 2,
               ErrorCode::kUnsupported, "'w' has dtype 'Q4_K'");
  expect_error(R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", 8, ErrorCode::kCorruptFile,
               "\"dtype\" is missing");
}

TEST(Safetensors, ShapeMustBeNonNegativeIntegers) {
  const char* cases[] = {"[-1]", "[2.5]", "[\"3\"]", "[true]", "[[2]]", "3", "[18446744073709551615]"};
  for (const char* shape : cases) {
    const std::string h = std::string(R"({"w": {"dtype": "F32", "shape": )") + shape +
                          R"(, "data_offsets": [0, 4]}})";
    expect_error(h, 4, ErrorCode::kCorruptFile, "'w'");
  }
  expect_error(R"({"w": {"dtype": "F32", "shape": [2, -3], "data_offsets": [0, 4]}})", 4,
               ErrorCode::kCorruptFile, "shape[1] is -3");
}

TEST(Safetensors, ByteCountMustMatchShape) {
  expect_error(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}})", 8,
               ErrorCode::kCorruptFile, "needs 16 bytes");
  // 4 * (2^62 + 2) wraps to 8 in 64 bits: the overflow check must catch it, not match it.
  expect_error(R"({"w": {"dtype": "F32", "shape": [4611686018427387906], "data_offsets": [0, 8]}})",
               8, ErrorCode::kCorruptFile, "too large");
  // No bytes, but strides that overflow int64: refused whatever the position of the zero dim.
  expect_error(R"({"w": {"dtype": "F32", "shape": [0, 4294967296, 4294967296], "data_offsets": [0, 0]}})",
               0, ErrorCode::kCorruptFile, "too large");
}

TEST(Safetensors, OffsetsMustBeInRangeAndOrdered) {
  expect_error(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 12,
               ErrorCode::kCorruptFile, "truncated");
  expect_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 12,
               ErrorCode::kCorruptFile, "end before they begin");
  expect_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4,
               ErrorCode::kCorruptFile, "data_offsets");
  expect_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4,
               ErrorCode::kCorruptFile, "data_offsets");
}

TEST(Safetensors, OverlappingTensorsAreRejected) {
  expect_error(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
               12, ErrorCode::kCorruptFile, "'a' [0, 8) and 'b' [4, 12) overlap");
  // An empty tensor owns no bytes, so sitting inside another one is fine.
  const auto ok = parse_bytes(raw_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}})", 8));
  EXPECT_TRUE(ok.has_value()) << ok.status().to_string();
}

TEST(Safetensors, MissingFileDirectoryAndEmptyFile) {
  TempDir dir{"st"};
  const auto missing = SafetensorsFile::open(dir.file("nope.safetensors"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.safetensors"), std::string::npos);

  const auto folder = SafetensorsFile::open(dir.path.string());
  ASSERT_FALSE(folder.has_value());
  EXPECT_EQ(folder.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(folder.status().message().find("directory"), std::string::npos);

  std::ofstream(dir.file("empty.safetensors")).close();
  const auto empty = SafetensorsFile::open(dir.file("empty.safetensors"));
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.status().code(), ErrorCode::kCorruptFile);
}

}  // namespace
}  // namespace orochi::weights
