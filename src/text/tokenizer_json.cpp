#include "text/tokenizer_json.h"

#include <nlohmann/json.hpp>

namespace orochi::text {
namespace {

using json = nlohmann::json;

// The parser quotes the offending bytes; keep binary garbage out of terminals and logs.
std::string printable(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return s;
}

// Token strings are valid UTF-8 (the JSON parser checked); only control characters are hidden.
std::string printable_token(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

std::string type_of(const json& v) {
  if (v.is_object() && v.contains("type") && v["type"].is_string()) return v["type"].get<std::string>();
  return std::string("a JSON ") + v.type_name();
}

class Reader {
 public:
  explicit Reader(std::string label) : label_(std::move(label)) {}

  Status corrupt(const std::string& what) const { return corrupt_file(label_ + ": " + what); }
  Status unsupported_(const std::string& what) const {
    return unsupported(label_ + ": " + what +
                       "; Orochi reads byte-level BPE tokenizers laid out like Qwen2 / Qwen3-VL's");
  }

  // Absent or null keeps `out`.
  Status get_bool(const json& obj, const char* key, const std::string& where, bool& out) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::ok();
    if (!it->is_boolean()) return corrupt(where + "." + key + " must be true or false");
    out = it->get<bool>();
    return Status::ok();
  }

  // A string, or "" when absent or null.
  Status get_string(const json& obj, const char* key, const std::string& where, std::string& out) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::ok();
    if (!it->is_string()) return corrupt(where + "." + key + " must be a string");
    out = it->get<std::string>();
    return Status::ok();
  }

  Status read_normalizer(const json& n, bool& nfc) const {
    if (n.is_null()) return Status::ok();
    const std::string type = type_of(n);
    if (type == "NFC") {
      nfc = true;
      return Status::ok();
    }
    if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
      for (const json& inner : n["normalizers"]) OROCHI_RETURN_IF_ERROR(read_normalizer(inner, nfc));
      return Status::ok();
    }
    return unsupported_("normalizer '" + type + "' is not supported (only NFC)");
  }

  Status read_pre_tokenizer(const json& p, SplitPattern& split) const {
    const std::string expected = " (expected Sequence[Split(regex, Isolated), ByteLevel(use_regex=false)])";
    if (type_of(p) != "Sequence" || !p.contains("pretokenizers") || !p["pretokenizers"].is_array() ||
        p["pretokenizers"].size() != 2)
      return unsupported_("pre_tokenizer '" + type_of(p) + "' is not supported" + expected);
    const json& s = p["pretokenizers"][0];
    const json& b = p["pretokenizers"][1];
    if (type_of(s) != "Split" || type_of(b) != "ByteLevel")
      return unsupported_("pre_tokenizer Sequence[" + type_of(s) + ", " + type_of(b) + "] is not supported" +
                          expected);
    const json* regex = nullptr;
    if (s.contains("pattern") && s["pattern"].is_object() && s["pattern"].contains("Regex"))
      regex = &s["pattern"]["Regex"];
    if (regex == nullptr || !regex->is_string())
      return unsupported_("the Split pre-tokenizer must hold {\"Regex\": ...}");
    const std::optional<SplitPattern> pattern = SplitPattern::recognize(regex->get<std::string>());
    if (!pattern)
      return unsupported_("the Split regex " + printable(regex->get<std::string>()) +
                          " is not one Orochi implements (Qwen's is " + SplitPattern::qwen_regex() + ")");
    split = *pattern;
    std::string behavior;
    bool invert = false;
    OROCHI_RETURN_IF_ERROR(get_string(s, "behavior", "pre_tokenizer.Split", behavior));
    OROCHI_RETURN_IF_ERROR(get_bool(s, "invert", "pre_tokenizer.Split", invert));
    if (behavior != "Isolated" || invert)
      return unsupported_("Split behavior '" + behavior + "'" + (invert ? " with invert" : "") +
                          " is not supported (only Isolated)");
    bool add_prefix_space = false, use_regex = true;
    OROCHI_RETURN_IF_ERROR(get_bool(b, "add_prefix_space", "pre_tokenizer.ByteLevel", add_prefix_space));
    OROCHI_RETURN_IF_ERROR(get_bool(b, "use_regex", "pre_tokenizer.ByteLevel", use_regex));
    if (add_prefix_space || use_regex)
      return unsupported_("ByteLevel with add_prefix_space or use_regex set is not supported");
    return Status::ok();
  }

  Status read_merges(const json& merges, BpeModelSpec& model) const {
    if (!merges.is_array()) return corrupt("model.merges must be a list");
    model.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const json& m = merges[i];
      if (m.is_string()) {  // the older "left right" form
        const std::string& line = m.get_ref<const std::string&>();
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
          return corrupt("model.merges[" + std::to_string(i) + "] '" + printable_token(line) +
                         "' is not two tokens separated by one space");
        model.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        model.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return corrupt("model.merges[" + std::to_string(i) + "] must be \"a b\" or [\"a\", \"b\"]");
      }
    }
    return Status::ok();
  }

  Status read_model(const json& m, BpeModelSpec& model) const {
    if (!m.is_object()) return corrupt("'model' must be an object");
    const std::string type = m.contains("type") ? type_of(m) : "BPE";  // old files leave it out
    if (type != "BPE") return unsupported_("model type '" + type + "' is not supported (only BPE)");
    if (m.contains("dropout") && !m["dropout"].is_null() &&
        !(m["dropout"].is_number() && m["dropout"].get<double>() == 0.0))
      return unsupported_("BPE dropout is not supported (inference tokenizes deterministically)");
    std::string prefix, suffix;
    OROCHI_RETURN_IF_ERROR(get_string(m, "continuing_subword_prefix", "model", prefix));
    OROCHI_RETURN_IF_ERROR(get_string(m, "end_of_word_suffix", "model", suffix));
    if (!prefix.empty() || !suffix.empty())
      return unsupported_("BPE continuing_subword_prefix / end_of_word_suffix are not supported");
    bool byte_fallback = false;
    OROCHI_RETURN_IF_ERROR(get_bool(m, "byte_fallback", "model", byte_fallback));
    if (byte_fallback) return unsupported_("BPE byte_fallback is not supported");
    OROCHI_RETURN_IF_ERROR(get_bool(m, "fuse_unk", "model", model.fuse_unk));
    OROCHI_RETURN_IF_ERROR(get_bool(m, "ignore_merges", "model", model.ignore_merges));
    std::string unk;
    OROCHI_RETURN_IF_ERROR(get_string(m, "unk_token", "model", unk));
    if (!unk.empty()) model.unk_token = unk;

    const auto vocab = m.find("vocab");
    if (vocab == m.end() || !vocab->is_object()) return corrupt("model.vocab must be an object of token: id");
    model.vocab.reserve(vocab->size());
    for (const auto& [token, id] : vocab->items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > kMaxTokenId)
        return corrupt("model.vocab['" + printable_token(token) + "'] must be an id in [0, 2^24)");
      model.vocab.emplace_back(token, static_cast<int32_t>(id.get<int64_t>()));
    }
    const auto merges = m.find("merges");
    if (merges == m.end()) return corrupt("model.merges is missing");
    return read_merges(*merges, model);
  }

  Status read_added_tokens(const json& list, std::vector<AddedToken>& tokens) const {
    if (list.is_null()) return Status::ok();
    if (!list.is_array()) return corrupt("'added_tokens' must be a list");
    for (size_t i = 0; i < list.size(); ++i) {
      const json& t = list[i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || t["id"].get<int64_t>() < 0 ||
          t["id"].get<int64_t>() > kMaxTokenId || !t.contains("content") || !t["content"].is_string())
        return corrupt(where + " needs an integer 'id' in [0, 2^24) and a string 'content'");
      AddedToken token;
      token.id = static_cast<int32_t>(t["id"].get<int64_t>());
      token.content = t["content"].get<std::string>();
      OROCHI_RETURN_IF_ERROR(get_bool(t, "special", where, token.special));
      token.normalized = !token.special;  // the reference's default
      OROCHI_RETURN_IF_ERROR(get_bool(t, "normalized", where, token.normalized));
      OROCHI_RETURN_IF_ERROR(get_bool(t, "lstrip", where, token.lstrip));
      OROCHI_RETURN_IF_ERROR(get_bool(t, "rstrip", where, token.rstrip));
      bool single_word = false;
      OROCHI_RETURN_IF_ERROR(get_bool(t, "single_word", where, single_word));
      if (single_word)
        return unsupported_(where + " ('" + printable_token(token.content) +
                            "') sets single_word, which is not supported");
      if (token.content.empty()) continue;  // the reference ignores empty tokens too
      tokens.push_back(std::move(token));
    }
    return Status::ok();
  }

 private:
  std::string label_;
};

}  // namespace

Expected<TokenizerSpec> parse_tokenizer_json(std::string_view text, const std::string& label) {
  const Reader reader(label);
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return reader.corrupt("not valid JSON (" + printable(e.what()) +
                          "); re-download tokenizer.json from the checkpoint's tokenizer/ folder");
  }
  if (!root.is_object()) return reader.corrupt("the file must hold a JSON object, got " + type_of(root));
  if (!root.contains("model")) return reader.corrupt("no 'model' section: this is not a tokenizer.json");

  TokenizerSpec spec;
  OROCHI_RETURN_IF_ERROR(reader.read_model(root["model"], spec.model));
  OROCHI_RETURN_IF_ERROR(reader.read_normalizer(root.value("normalizer", json()), spec.nfc));
  if (!root.contains("pre_tokenizer") || root["pre_tokenizer"].is_null())
    return reader.unsupported_("a tokenizer without a pre_tokenizer is not supported");
  OROCHI_RETURN_IF_ERROR(reader.read_pre_tokenizer(root["pre_tokenizer"], spec.split));
  if (const json decoder = root.value("decoder", json()); !decoder.is_null() && type_of(decoder) != "ByteLevel")
    return reader.unsupported_("decoder '" + type_of(decoder) + "' is not supported (only ByteLevel)");
  OROCHI_RETURN_IF_ERROR(reader.read_added_tokens(root.value("added_tokens", json()), spec.added_tokens));
  return spec;
}

}  // namespace orochi::text
