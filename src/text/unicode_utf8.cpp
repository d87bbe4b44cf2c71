#include "text/unicode_utf8.h"

namespace orochi::text {
namespace {

// Length of the well-formed sequence starting at bytes[pos], or of its longest well-formed prefix
// (negated, at least 1) when it is cut short: the "maximal subpart" of Unicode §3.9.
int sequence_length(std::string_view bytes, size_t pos) {
  const auto at = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char b0 = at(pos);
  if (b0 < 0x80) return 1;
  int need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return -1;  // a continuation byte, C0/C1 or F5..FF cannot start a sequence
  }
  for (int k = 1; k <= need; ++k) {
    if (pos + k >= bytes.size()) return -k;
    const unsigned char b = at(pos + k);
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return -k;
  }
  return need + 1;
}

}  // namespace

std::optional<size_t> first_invalid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {  // ASCII runs dominate prompts
      ++pos;
      continue;
    }
    const int len = sequence_length(text, pos);
    if (len < 0) return pos;
    pos += static_cast<size_t>(len);
  }
  return std::nullopt;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const int len = sequence_length(bytes, pos);
    if (len > 0) {
      out.append(bytes.substr(pos, static_cast<size_t>(len)));
      pos += static_cast<size_t>(len);
    } else {
      append_utf8(out, kReplacementChar);
      pos += static_cast<size_t>(-len);
    }
  }
  return out;
}

}  // namespace orochi::text
