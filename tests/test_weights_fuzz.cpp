// A bounded, deterministic mutation fuzz of SafetensorsFile::parse that runs in CI in seconds:
// valid files get byte flips, truncations, header-length rewrites, JSON token splices and numbers
// swapped for huge / negative / fractional ones. parse must always answer with a value or a
// Status (never crash, throw or hang), and any value it returns must only describe bytes inside
// the input. Set OROCHI_FUZZ_SEED to replay a run; OROCHI_FUZZ_ITERATIONS to run longer.
// (tests/fuzz/fuzz_safetensors.cpp is the open-ended libFuzzer version.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "weights/safetensors.h"
#include "weights/safetensors_writer.h"

namespace orochi::weights {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 0) : fallback;
}

Tensor patterned(const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(i * 7 + 1);
  return t;
}

// Valid files to start from, written by our writer (so the round trip is covered too).
std::vector<Bytes> seed_files() {
  const fs::path dir = fs::temp_directory_path() /
                       ("orochi_fuzz_" + std::to_string(::getpid()) + "_" +
                        std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const std::vector<std::vector<std::pair<std::string, Tensor>>> sets = {
      {{"a.weight", patterned({2, 3}, DType::kF32)}, {"a.bias", patterned({3}, DType::kBF16)},
       {"b", patterned({5}, DType::kF8E4M3)}, {"c", patterned({2}, DType::kI64)}},
      {{"empty", patterned({0, 7}, DType::kF16)}, {"s", patterned({}, DType::kF32)}},
      {},
  };
  std::vector<Bytes> out;
  for (size_t i = 0; i < sets.size(); ++i) {
    const std::string path = (dir / ("s" + std::to_string(i) + ".safetensors")).string();
    const Status s = write_safetensors(path, sets[i], i == 0 ? std::map<std::string, std::string>{
                                                                   {"format", "pt"}}
                                                             : std::map<std::string, std::string>{});
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    std::ifstream in(path, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  fs::remove_all(dir);
  return out;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  void mutate(Bytes& b) {
    switch (below(6)) {
      case 0: flip_bytes(b); break;
      case 1: b.resize(below(b.size() + 1)); break;
      case 2: rewrite_header_length(b); break;
      case 3: splice_header(b, pick(kTokens)); break;
      case 4: replace_number(b); break;
      default: b.insert(b.begin() + below(b.size() + 1), below(9), static_cast<uint8_t>(rng_())); break;
    }
  }

 private:
  static constexpr const char* kTokens[] = {
      "{", "}", "[", "]", "\"", ",", ":", " ", "null", "true", "-1", "0", "1e400", "\"F32\"",
      "\"Q4_K\"", "\"BOOL\"", "\"__metadata__\"", "\"dtype\"", "\"shape\"", "\"data_offsets\"",
      "[0, 0]", "[18446744073709551615]", "{\"x\": {}}", "\\u0000", "\xff", "[[[[[[[["};
  static constexpr const char* kNumbers[] = {
      "-1", "0", "1", "-0", "0.5", "1e3", "1e400", "9223372036854775807", "9223372036854775808",
      "18446744073709551615", "18446744073709551616", "4611686018427387906", "4294967296",
      "99999999999999999999999999", "-9223372036854775808"};

  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  template <size_t N>
  const char* pick(const char* const (&list)[N]) { return list[below(N)]; }

  static uint64_t header_len(const Bytes& b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }
  static void set_header_len(Bytes& b, uint64_t v) {
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  }
  // The header as [8, end) when the length field is sane; an empty range otherwise.
  size_t header_end(const Bytes& b) const {
    if (b.size() < 8) return 0;
    const uint64_t len = header_len(b);
    return len <= b.size() - 8 ? 8 + static_cast<size_t>(len) : 0;
  }

  void flip_bytes(Bytes& b) {
    if (b.empty()) return;
    for (size_t n = 1 + below(4); n-- > 0;) {
      uint8_t& byte = b[below(b.size())];
      byte = below(2) ? static_cast<uint8_t>(byte ^ (1u << below(8))) : static_cast<uint8_t>(rng_());
    }
  }

  void rewrite_header_length(Bytes& b) {
    if (b.size() < 8) return;
    const uint64_t len = header_len(b);
    const uint64_t choices[] = {0, len + 1, len - 1, b.size() - 8, b.size(), uint64_t{100} << 20,
                                (uint64_t{100} << 20) + 1, ~uint64_t{0}, rng_()};
    set_header_len(b, choices[below(std::size(choices))]);
  }

  // Replaces a random span of the header with `token` and, usually, fixes the length field.
  void splice_header(Bytes& b, const std::string& token) {
    const size_t end = header_end(b);
    if (end <= 8) return;
    const size_t at = 8 + below(end - 8);
    const size_t erase = std::min(below(4), end - at);
    b.erase(b.begin() + at, b.begin() + at + erase);
    b.insert(b.begin() + at, token.begin(), token.end());
    if (below(8) != 0) set_header_len(b, end - 8 - erase + token.size());
  }

  // Swaps one integer literal of the header for an edge-case number.
  void replace_number(Bytes& b) {
    const size_t end = header_end(b);
    std::vector<std::pair<size_t, size_t>> runs;  // [start, stop) of digit runs
    for (size_t i = 8; i < end;) {
      if (!std::isdigit(b[i])) { ++i; continue; }
      size_t j = i;
      while (j < end && std::isdigit(b[j])) ++j;
      runs.emplace_back(i, j);
      i = j;
    }
    if (runs.empty()) return splice_header(b, pick(kNumbers));
    const auto [start, stop] = runs[below(runs.size())];
    const std::string number = pick(kNumbers);
    b.erase(b.begin() + start, b.begin() + stop);
    b.insert(b.begin() + start, number.begin(), number.end());
    set_header_len(b, end - 8 - (stop - start) + number.size());
  }

  std::mt19937_64 rng_;  // fully specified by the standard: the same seed replays everywhere
};

TEST(SafetensorsFuzz, RandomMutationsNeverCrashAndStayInBounds) {
  const uint64_t seed = env_or("OROCHI_FUZZ_SEED", 20240611);
  const uint64_t iterations = env_or("OROCHI_FUZZ_ITERATIONS", 20000);
  std::printf("safetensors fuzz: seed %llu, %llu iterations (OROCHI_FUZZ_SEED to replay)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(iterations));
  const std::vector<Bytes> seeds = seed_files();
  ASSERT_EQ(seeds.size(), 3u);

  Mutator mutator(seed);
  std::map<ErrorCode, int> outcomes;
  for (uint64_t iter = 0; iter < iterations; ++iter) {
    Bytes bytes = seeds[iter % seeds.size()];
    for (uint64_t n = 1 + iter % 3; n-- > 0;) mutator.mutate(bytes);
    // A copy of exactly the right size, so reading past the end trips sanitizers.
    auto owned = std::make_shared<Bytes>(bytes);
    const uint8_t* data = owned->data();
    const size_t size = owned->size();
    try {
      const auto file = SafetensorsFile::parse(owned, data, size, "fuzz");
      ++outcomes[file.status().code()];
      if (!file.has_value()) {
        ASSERT_FALSE(file.status().message().empty()) << "iteration " << iter;
        continue;
      }
      const SafetensorsFile& f = **file;
      ASSERT_GE(f.data_section(), data + 8) << "iteration " << iter;
      ASSERT_LE(f.data_section() + f.data_bytes(), data + size) << "iteration " << iter;
      for (const TensorInfo& info : f.tensors()) {
        ASSERT_LE(info.begin, info.end) << "iteration " << iter << " tensor " << info.name;
        ASSERT_LE(info.end, f.data_bytes()) << "iteration " << iter << " tensor " << info.name;
        const Tensor t = f.tensor(info);
        ASSERT_EQ(t.nbytes(), info.nbytes());
        const auto* p = static_cast<const uint8_t*>(t.raw_data());
        volatile unsigned sum = 0;  // volatile: the reads must happen, so sanitizers see them
        for (size_t i = 0; i < t.nbytes(); ++i) sum = sum + p[i];
      }
    } catch (const std::exception& e) {
      FAIL() << "iteration " << iter << " (seed " << seed << ") threw: " << e.what();
    }
  }
  for (const auto& [code, count] : outcomes) std::printf("  %-16s %d\n", error_code_name(code), count);
  // Both sides must be exercised, or the mutations are too weak (or too strong) to mean much.
  EXPECT_GT(outcomes[ErrorCode::kOk], 100);
  EXPECT_GT(outcomes[ErrorCode::kCorruptFile], 100);
}

}  // namespace
}  // namespace orochi::weights
