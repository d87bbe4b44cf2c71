// Unicode property tables for the Qwen tokenizer, generated from Python's unicodedata by
// scripts/golden/make_unicode_tables.py into unicode_tables.cpp. Every table is sorted by its first
// field so lookups binary-search it.
#pragma once

#include <cstdint>
#include <span>

namespace orochi::text::unicode_tables {

struct CodePointRange {
  uint32_t first;
  uint32_t last;  // inclusive
};

struct CombiningClassRange {
  uint32_t first;
  uint32_t last;  // inclusive; every code point in it has `ccc`
  uint8_t ccc;
};

// One level of canonical decomposition; `second` is 0 for a singleton. Hangul syllables are not
// listed: they decompose algorithmically.
struct Decomposition {
  uint32_t code_point;
  uint32_t first;
  uint32_t second;
};

// A primary composite: `first` + `second` compose to `composite` under NFC (exclusions left out).
// Sorted by (first, second).
struct Composition {
  uint32_t first;
  uint32_t second;
  uint32_t composite;
};

const char* unicode_version();                        // of the data the tables came from
std::span<const CodePointRange> letters();            // General_Category L* (\p{L})
std::span<const CodePointRange> numbers();            // General_Category N* (\p{N})
std::span<const CodePointRange> nfc_unstable();       // may change, or change a neighbour, under NFC
std::span<const CombiningClassRange> combining_classes();  // non-zero classes only
std::span<const Decomposition> decompositions();      // sorted by code_point
std::span<const Composition> compositions();          // sorted by (first, second)

}  // namespace orochi::text::unicode_tables
