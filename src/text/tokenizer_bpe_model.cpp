#include "text/tokenizer_bpe_model.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <queue>

#include "text/tokenizer_byte_level.h"

namespace orochi::text {

// Words seen before skip the merge loop: prompts repeat words, and the vision blocks repeat one
// token hundreds of times. Bounded: cleared when full, short words only (as the reference does).
struct BpeModel::WordCache {
  static constexpr size_t kMaxEntries = size_t{1} << 16;
  static constexpr size_t kMaxWordBytes = 256;
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>> ids_of_word;
};

BpeModel::BpeModel() : cache_(std::make_unique<WordCache>()) {}
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;
BpeModel::~BpeModel() = default;

Expected<BpeModel> BpeModel::build(const BpeModelSpec& spec) {
  BpeModel model;
  model.vocab_.reserve(spec.vocab.size());
  int32_t max_id = -1;
  for (const auto& [token, id] : spec.vocab) {
    if (id < 0 || id > kMaxTokenId)
      return corrupt_file("model.vocab['" + token + "'] has the id " + std::to_string(id) +
                          ", outside [0, 2^24)");
    if (!model.vocab_.emplace(token, id).second)
      return corrupt_file("model.vocab lists '" + token + "' twice");
    max_id = std::max(max_id, id);
  }
  model.string_of_id_.assign(static_cast<size_t>(max_id + 1), nullptr);
  for (int32_t& id : model.byte_ids_) id = -1;
  for (const auto& [token, id] : model.vocab_) {
    if (model.string_of_id_[id] != nullptr)
      return corrupt_file("model.vocab gives id " + std::to_string(id) + " to both '" +
                          *model.string_of_id_[id] + "' and '" + token + "'");
    model.string_of_id_[id] = &token;
    // Tokens outside the byte-level alphabet cannot come out of the merges; they stay decodable.
    if (std::optional<std::string> bytes = byte_level_to_bytes(token)) {
      if (bytes->size() == 1) model.byte_ids_[static_cast<unsigned char>((*bytes)[0])] = id;
      model.id_of_bytes_.emplace(std::move(*bytes), id);
    }
  }

  model.merges_.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [left, right] = spec.merges[rank];
    const auto l = model.vocab_.find(left), r = model.vocab_.find(right);
    const auto merged = model.vocab_.find(left + right);
    const std::string where = "model.merges[" + std::to_string(rank) + "] ('" + left + "', '" + right + "')";
    if (l == model.vocab_.end()) return corrupt_file(where + ": '" + left + "' is not in model.vocab");
    if (r == model.vocab_.end()) return corrupt_file(where + ": '" + right + "' is not in model.vocab");
    if (merged == model.vocab_.end())
      return corrupt_file(where + ": the merged token '" + left + right + "' is not in model.vocab");
    // A repeated pair takes its last rank, as the reference's map insertion does.
    model.merges_[pair_key(l->second, r->second)] = Merge{static_cast<uint32_t>(rank), merged->second};
  }

  if (spec.unk_token) {
    const auto it = model.vocab_.find(*spec.unk_token);
    if (it == model.vocab_.end())
      return corrupt_file("model.unk_token '" + *spec.unk_token + "' is not in model.vocab");
    model.unk_id_ = it->second;
  }
  model.fuse_unk_ = spec.fuse_unk;
  model.ignore_merges_ = spec.ignore_merges;
  return model;
}

std::optional<int32_t> BpeModel::token_id(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  return it == vocab_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

const std::string* BpeModel::token_string(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= string_of_id_.size()) return nullptr;
  return string_of_id_[id];
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto it = id_of_bytes_.find(std::string(word)); it != id_of_bytes_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  if (word.size() == 1 && byte_ids_[static_cast<unsigned char>(word[0])] >= 0) {
    ids.push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  const bool cacheable = word.size() < WordCache::kMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    if (const auto it = cache_->ids_of_word.find(std::string(word)); it != cache_->ids_of_word.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids.size();
  merge(word, ids);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    if (cache_->ids_of_word.size() >= WordCache::kMaxEntries) cache_->ids_of_word.clear();
    cache_->ids_of_word.emplace(std::string(word), std::vector<int32_t>(ids.begin() + first, ids.end()));
  }
}

// Byte-pair merging over a linked list of symbols: a min-heap holds candidate merges ordered by
// (rank, position); entries made stale by an earlier merge are skipped when popped.
void BpeModel::merge(std::string_view word, std::vector<int32_t>& ids) const {
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t merged_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };

  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  bool last_was_unk = false;
  for (unsigned char byte : word) {
    int32_t id = byte_ids_[byte];
    if (id < 0) {
      if (!unk_id_) continue;  // no unk token: the reference drops the byte
      if (fuse_unk_ && last_was_unk) continue;
      id = *unk_id_;
      last_was_unk = true;
    } else {
      last_was_unk = false;
    }
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, n - 1, n + 1, true});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto push_pair = [&](int32_t left_pos) {
    const Symbol& left = symbols[left_pos];
    if (left.next < 0) return;
    const auto it = merges_.find(pair_key(left.id, symbols[left.next].id));
    if (it != merges_.end()) queue.push(Candidate{it->second.rank, left_pos, it->second.merged_id});
  };
  for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) push_pair(pos);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.merged_id != top.merged_id) continue;  // stale entry
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (int32_t pos = 0; pos >= 0; pos = symbols[pos].next) ids.push_back(symbols[pos].id);
}

}  // namespace orochi::text
