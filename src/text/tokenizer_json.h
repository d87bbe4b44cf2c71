// Reads a Hugging Face tokenizer.json into what BpeTokenizer needs, and says clearly what it does
// not support. Supported: the Qwen2 / Qwen3-VL layout (NFC normalizer; Split(Qwen or Llama-3 regex,
// Isolated) then ByteLevel(add_prefix_space=false, use_regex=false); BPE model; ByteLevel decoder;
// added tokens with lstrip / rstrip / normalized). The post-processor is ignored: H3 tokenizes the
// prompt verbatim, with no special tokens added.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/tokenizer_added_tokens.h"
#include "text/tokenizer_bpe_model.h"
#include "text/tokenizer_pretokenizer.h"

namespace orochi::text {

struct TokenizerSpec {
  bool nfc = false;  // normalizer: NFC, or none
  SplitPattern split;
  BpeModelSpec model;
  std::vector<AddedToken> added_tokens;
};

// `label` names the file in errors.
Expected<TokenizerSpec> parse_tokenizer_json(std::string_view json_text, const std::string& label);

}  // namespace orochi::text
