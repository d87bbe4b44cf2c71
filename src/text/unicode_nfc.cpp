#include "text/unicode_nfc.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "text/unicode_properties.h"
#include "text/unicode_tables.h"
#include "text/unicode_utf8.h"

namespace orochi::text {
namespace {

// Hangul syllables decompose and compose arithmetically (Unicode §3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr uint32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

bool may_change_under_nfc(uint32_t cp) {
  if (cp < 0x300) return false;  // nothing below U+0300 decomposes, combines or has a class
  const auto ranges = unicode_tables::nfc_unstable();
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), cp,
                                   [](const unicode_tables::CodePointRange& r, uint32_t v) {
                                     return r.last < v;
                                   });
  return it != ranges.end() && it->first <= cp;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto table = unicode_tables::decompositions();
  const auto it = std::lower_bound(table.begin(), table.end(), cp,
                                   [](const unicode_tables::Decomposition& d, uint32_t v) {
                                     return d.code_point < v;
                                   });
  if (it == table.end() || it->code_point != cp) {
    out.push_back(cp);
    return;
  }
  decompose(it->first, out);  // recursive: a decomposition's first half may decompose again
  if (it->second != 0) decompose(it->second, out);
}

// The primary composite of (first, second), or 0.
uint32_t compose(uint32_t first, uint32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount)
    return first + (second - kTBase);
  const auto table = unicode_tables::compositions();
  const auto it = std::lower_bound(table.begin(), table.end(), std::pair{first, second},
                                   [](const unicode_tables::Composition& c, std::pair<uint32_t, uint32_t> v) {
                                     return c.first != v.first ? c.first < v.first : c.second < v.second;
                                   });
  return it != table.end() && it->first == first && it->second == second ? it->composite : 0;
}

// Canonical ordering: every run of non-starters is stably sorted by combining class.
void reorder(std::vector<uint32_t>& cps) {
  size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    if (j - i > 1)
      std::stable_sort(cps.begin() + i, cps.begin() + j, [](uint32_t a, uint32_t b) {
        return combining_class(a) < combining_class(b);
      });
    i = j;
  }
}

// Canonical composition: each character joins the last starter unless a character between them
// blocks it (a starter, or a non-starter of the same or higher class).
std::vector<uint32_t> recompose(const std::vector<uint32_t>& cps) {
  std::vector<uint32_t> out;
  out.reserve(cps.size());
  ptrdiff_t starter = -1;  // index in `out` of the last starter
  for (uint32_t cp : cps) {
    const uint8_t cc = combining_class(cp);
    if (starter >= 0) {
      const bool adjacent = static_cast<ptrdiff_t>(out.size()) - 1 == starter;
      if (adjacent || combining_class(out.back()) < cc) {
        if (const uint32_t composite = compose(out[starter], cp); composite != 0) {
          out[starter] = composite;
          continue;
        }
      }
    }
    out.push_back(cp);
    if (cc == 0) starter = static_cast<ptrdiff_t>(out.size()) - 1;
  }
  return out;
}

}  // namespace

std::string nfc(std::string_view text) {
  bool stable = true;
  for (size_t pos = 0; pos < text.size() && stable;) {
    if (static_cast<unsigned char>(text[pos]) < 0xCC) {  // lead bytes below 0xCC encode < U+0300
      pos += static_cast<unsigned char>(text[pos]) < 0x80 ? 1 : 2;
      continue;
    }
    stable = !may_change_under_nfc(next_code_point(text, pos));
  }
  if (stable) return std::string(text);

  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) decompose(next_code_point(text, pos), cps);
  reorder(cps);
  std::string out;
  out.reserve(text.size());
  for (uint32_t cp : recompose(cps)) append_utf8(out, cp);
  return out;
}

}  // namespace orochi::text
