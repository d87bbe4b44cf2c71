// The text tokenizer of MiniMax-H3's conditioner (Qwen3-VL): a byte-level BPE read from the
// Hugging Face tokenizer.json shipped in the checkpoint's tokenizer/ folder.
//
// encode() follows the reference `tokenizers` library with add_special_tokens=False, which is how
// H3 tokenizes a prompt (verbatim: no chat template, no special tokens added, no truncation):
//   1. added tokens (<|vision_start|>, <d>, ...) are cut out of the raw text, leftmost-longest;
//   2. the rest is NFC-normalized, and added tokens marked `normalized` are cut out of that;
//   3. each remaining run is split into words by the Qwen regex (tokenizer_pretokenizer.h);
//   4. each word's UTF-8 bytes are merged by BPE rank into ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "text/tokenizer_added_tokens.h"
#include "text/tokenizer_bpe_model.h"
#include "text/tokenizer_pretokenizer.h"

namespace orochi::text {

struct TokenizerSpec;

class BpeTokenizer {
 public:
  // `path` is a tokenizer.json or a folder holding one (the checkpoint's tokenizer/).
  static Expected<BpeTokenizer> load(const std::string& path);
  // The same from the file's text; `label` names it in errors.
  static Expected<BpeTokenizer> from_json(std::string_view json_text,
                                          const std::string& label = "tokenizer.json");

  // Token ids of a UTF-8 prompt. Invalid UTF-8 is an invalid_argument naming the byte offset.
  Expected<std::vector<int32_t>> encode(std::string_view utf8) const;
  // As above, and an invalid_argument when the prompt is longer than `max_tokens`.
  Expected<std::vector<int32_t>> encode(std::string_view utf8, size_t max_tokens) const;
  // Text of the ids (special tokens included); ids the vocabulary lacks are skipped and byte
  // sequences that are not UTF-8 become U+FFFD, as the reference decoder does.
  std::string decode(const std::vector<int32_t>& ids) const;

  // Id of an added token ("<|vision_start|>") or of a vocabulary string in byte-level form ("Ġthe").
  std::optional<int32_t> token_id(std::string_view token) const;
  // Distinct tokens: the BPE vocabulary plus the added tokens (about 151.7 k for Qwen3-VL, whose
  // embedding table is padded to 151,936 rows).
  size_t vocab_size() const { return vocab_size_; }
  // The normalizer alone (NFC, or the identity when the file has none), for callers and tests.
  std::string normalize(std::string_view valid_utf8) const;

 private:
  explicit BpeTokenizer(BpeModel model) : model_(std::move(model)) {}
  static Expected<BpeTokenizer> build(TokenizerSpec spec);
  void encode_run(std::string_view text, std::vector<int32_t>& ids) const;

  BpeModel model_;
  bool nfc_ = false;
  SplitPattern split_;
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized=false
  AddedTokenMatcher normalized_matcher_;  // added tokens with normalized=true, as NFC text
  std::unordered_map<std::string, int32_t> added_ids_;
  std::vector<std::string> decoded_;      // id -> bytes the decoder writes for it
  std::vector<bool> known_id_;
  size_t vocab_size_ = 0;
};

}  // namespace orochi::text
