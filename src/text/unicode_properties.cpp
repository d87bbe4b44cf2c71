#include "text/unicode_properties.h"

#include <algorithm>
#include <span>

#include "text/unicode_tables.h"

namespace orochi::text {
namespace {

using unicode_tables::CodePointRange;

bool in_ranges(std::span<const CodePointRange> ranges, uint32_t cp) {
  // The first range whose last >= cp; cp is in the table if that range starts at or before it.
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), cp,
                                   [](const CodePointRange& r, uint32_t v) { return r.last < v; });
  return it != ranges.end() && it->first <= cp;
}

}  // namespace

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(unicode_tables::letters(), cp);
}

bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(unicode_tables::numbers(), cp);
}

bool is_whitespace(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  // The property is small and stable since Unicode 6.3 (U+180E left it), so it is listed here.
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

uint8_t combining_class(uint32_t cp) {
  if (cp < 0x300) return 0;
  const auto ranges = unicode_tables::combining_classes();
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), cp,
                                   [](const unicode_tables::CombiningClassRange& r, uint32_t v) {
                                     return r.last < v;
                                   });
  return it != ranges.end() && it->first <= cp ? it->ccc : 0;
}

}  // namespace orochi::text
