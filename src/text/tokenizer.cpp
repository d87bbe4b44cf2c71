#include "text/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "text/tokenizer_byte_level.h"
#include "text/tokenizer_json.h"
#include "text/unicode_nfc.h"
#include "text/unicode_utf8.h"

namespace orochi::text {

namespace fs = std::filesystem;

Expected<BpeTokenizer> BpeTokenizer::load(const std::string& path) {
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(file, ec)) file /= "tokenizer.json";
  if (!fs::exists(file, ec))
    return not_found(file.string() + ": no such file; pass the checkpoint's tokenizer/ folder (it holds "
                     "tokenizer.json) or the tokenizer.json itself");
  if (fs::is_directory(file, ec))
    return invalid_argument(file.string() + " is a folder; pass the tokenizer.json file or its folder");
  std::ifstream in(file, std::ios::binary);
  if (!in) return io_error(file.string() + ": cannot open the file (check its permissions)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return io_error(file.string() + ": reading the file failed");
  return from_json(text.str(), file.string());
}

Expected<BpeTokenizer> BpeTokenizer::from_json(std::string_view json_text, const std::string& label) {
  OROCHI_ASSIGN_OR_RETURN(TokenizerSpec spec, parse_tokenizer_json(json_text, label));
  Expected<BpeTokenizer> tokenizer = build(std::move(spec));
  if (!tokenizer) return tokenizer.status().with_context(label);
  return tokenizer;
}

Expected<BpeTokenizer> BpeTokenizer::build(TokenizerSpec spec) {
  OROCHI_ASSIGN_OR_RETURN(BpeModel model, BpeModel::build(spec.model));
  BpeTokenizer t(std::move(model));
  t.nfc_ = spec.nfc;
  t.split_ = spec.split;

  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  for (const AddedToken& token : spec.added_tokens) {
    t.added_ids_[token.content] = token.id;
    if (token.normalized) {
      normalized.push_back(token);
      normalized_patterns.push_back(t.normalize(token.content));
    } else {
      raw.push_back(token);
      raw_patterns.push_back(token.content);
    }
  }
  t.raw_matcher_ = AddedTokenMatcher(raw, raw_patterns);
  t.normalized_matcher_ = AddedTokenMatcher(normalized, normalized_patterns);

  // Decoding table: what the ByteLevel decoder writes for each id. Added tokens take precedence
  // over the model vocabulary, and a normalized one decodes to its normalized text, as in the reference.
  size_t id_limit = 0;
  for (const auto& [token, id] : spec.model.vocab) id_limit = std::max(id_limit, static_cast<size_t>(id) + 1);
  for (const AddedToken& token : spec.added_tokens)
    id_limit = std::max(id_limit, static_cast<size_t>(token.id) + 1);
  t.decoded_.assign(id_limit, std::string());
  t.known_id_.assign(id_limit, false);
  for (const auto& [token, id] : spec.model.vocab) {
    t.decoded_[id] = byte_level_decode_token(token);
    t.known_id_[id] = true;
  }
  size_t added_outside_vocab = 0;
  for (const auto& [content, id] : t.added_ids_)
    if (!t.model_.token_id(content)) ++added_outside_vocab;
  for (const AddedToken& token : spec.added_tokens) {
    const std::string text = token.normalized ? t.normalize(token.content) : token.content;
    t.decoded_[token.id] = byte_level_decode_token(text);
    t.known_id_[token.id] = true;
  }
  t.vocab_size_ = t.model_.size() + added_outside_vocab;
  return t;
}

std::string BpeTokenizer::normalize(std::string_view text) const {
  return nfc_ ? nfc(text) : std::string(text);
}

void BpeTokenizer::encode_run(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<std::pair<size_t, size_t>> words;
  split_words(text, split_, words);
  for (const auto& [begin, end] : words) model_.encode_word(text.substr(begin, end - begin), ids);
}

Expected<std::vector<int32_t>> BpeTokenizer::encode(std::string_view text) const {
  if (const std::optional<size_t> bad = first_invalid_utf8(text)) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[*bad])));
    return invalid_argument("the prompt is not valid UTF-8: the byte " + std::string(hex) + " at byte offset " +
                            std::to_string(*bad) + " does not start a valid sequence; pass UTF-8 text");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  std::vector<TextPiece> raw_pieces, pieces;
  raw_matcher_.split(text, raw_pieces);
  for (const TextPiece& raw : raw_pieces) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    const std::string normalized = normalize(text.substr(raw.begin, raw.end - raw.begin));
    pieces.clear();
    normalized_matcher_.split(normalized, pieces);
    for (const TextPiece& piece : pieces) {
      if (piece.id >= 0)
        ids.push_back(piece.id);
      else
        encode_run(std::string_view(normalized).substr(piece.begin, piece.end - piece.begin), ids);
    }
  }
  return ids;
}

Expected<std::vector<int32_t>> BpeTokenizer::encode(std::string_view text, size_t max_tokens) const {
  OROCHI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, encode(text));
  if (ids.size() > max_tokens)
    return invalid_argument("prompt is " + std::to_string(ids.size()) + " tokens, the model allows " +
                            std::to_string(max_tokens) + "; shorten the prompt");
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string bytes;
  for (int32_t id : ids)
    if (id >= 0 && static_cast<size_t>(id) < decoded_.size() && known_id_[id]) bytes += decoded_[id];
  return utf8_lossy(bytes);
}

std::optional<int32_t> BpeTokenizer::token_id(std::string_view token) const {
  if (const auto it = added_ids_.find(std::string(token)); it != added_ids_.end()) return it->second;
  return model_.token_id(token);
}

}  // namespace orochi::text
