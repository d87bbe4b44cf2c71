// The BPE model of a byte-level tokenizer.json: vocabulary, ranked merges, and the merge loop that
// turns one pre-tokenized word (raw bytes) into token ids. Repeated words hit a cache.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace orochi::text {

// Ids index dense tables; real vocabularies stay far below this (Qwen: 151,936 rows), and a larger
// id in a file is damage, not a vocabulary.
inline constexpr int32_t kMaxTokenId = (int32_t{1} << 24) - 1;

struct BpeModelSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;         // byte-level strings ("Ġthe") -> id
  std::vector<std::pair<std::string, std::string>> merges;    // in rank order
  std::optional<std::string> unk_token;                       // Qwen: none (every byte is a token)
  bool fuse_unk = false;
  bool ignore_merges = false;  // look a whole word up in the vocabulary before merging
};

class BpeModel {
 public:
  // Fails (naming the entry) when a merge refers to a string outside the vocabulary.
  static Expected<BpeModel> build(const BpeModelSpec& spec);

  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;
  ~BpeModel();

  // Appends the ids of one word given as raw bytes (not the byte-level characters).
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  std::optional<int32_t> token_id(std::string_view byte_level_token) const;
  // The vocabulary string of `id` ("Ġthe"), or nullptr when the vocabulary has no such id.
  const std::string* token_string(int32_t id) const;
  size_t size() const { return vocab_.size(); }

 private:
  struct Merge {
    uint32_t rank;
    int32_t merged_id;
  };
  struct WordCache;

  BpeModel();
  void merge(std::string_view word, std::vector<int32_t>& ids) const;
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::unordered_map<std::string, int32_t> vocab_;             // byte-level string -> id
  std::unordered_map<std::string, int32_t> id_of_bytes_;       // raw bytes -> id (byte-level tokens)
  std::vector<const std::string*> string_of_id_;               // id -> byte-level string (sparse)
  int32_t byte_ids_[256];                                      // id of each single byte, -1 if none
  std::unordered_map<uint64_t, Merge> merges_;                 // (left id, right id) -> merge
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace orochi::text
