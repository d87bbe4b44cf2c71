#include "io/image_header.h"

#include <cstring>

namespace orochi::io {
namespace {

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t le32(const uint8_t* p) { return uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0]; }
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[1] << 8 | p[0]); }
uint32_t le24(const uint8_t* p) { return uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0]; }

bool starts_with(const std::vector<uint8_t>& b, const char* magic, size_t at = 0) {
  const size_t n = std::strlen(magic);
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

void parse_png(const std::vector<uint8_t>& b, ImageHeader& h) {
  h.complete = false;
  size_t pos = 8;
  while (pos + 8 <= b.size()) {
    const uint32_t length = be32(&b[pos]);
    const uint8_t* type = &b[pos + 4];
    const size_t data = pos + 8;
    if (length > b.size() || data + length + 4 > b.size()) return;  // a chunk runs past the end
    if (std::memcmp(type, "IHDR", 4) == 0 && length >= 8) {
      h.width = be32(&b[data]);
      h.height = be32(&b[data + 4]);
    } else if (std::memcmp(type, "eXIf", 4) == 0) {
      h.orientation = exif_orientation_from_tiff(&b[data], length);
    } else if (std::memcmp(type, "IEND", 4) == 0) {
      h.complete = true;
      return;
    }
    pos = data + length + 4;  // + CRC
  }
}

void parse_jpeg(const std::vector<uint8_t>& b, ImageHeader& h) {
  size_t pos = 2;
  while (pos + 4 <= b.size()) {
    if (b[pos] != 0xFF) { ++pos; continue; }
    const uint8_t marker = b[pos + 1];
    if (marker == 0xFF) { ++pos; continue; }  // fill bytes
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) { pos += 2; continue; }
    if (marker == 0xD9) return;
    const size_t length = be16(&b[pos + 2]);
    const size_t data = pos + 4;
    if (length < 2 || pos + 2 + length > b.size()) { h.complete = false; return; }
    const bool sof = (marker >= 0xC0 && marker <= 0xCF) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof && length >= 7 && h.width == 0) {
      h.height = be16(&b[data + 1]);
      h.width = be16(&b[data + 3]);
    } else if (marker == 0xE1 && length >= 8 && std::memcmp(&b[data], "Exif\0\0", 6) == 0 && h.orientation == 1) {
      h.orientation = exif_orientation_from_tiff(&b[data + 6], length - 2 - 6);
    } else if (marker == 0xDA) {
      // Entropy-coded data follows; the file must end with an EOI marker (PIL reports a truncated image
      // otherwise). Trailing bytes after EOI are allowed.
      h.complete = false;
      for (size_t i = b.size(); i-- > data + 1;)
        if (b[i - 1] == 0xFF && b[i] == 0xD9) { h.complete = true; break; }
      return;
    }
    pos += 2 + length;
  }
  h.complete = false;
}

void parse_webp(const std::vector<uint8_t>& b, ImageHeader& h) {
  const uint32_t riff_size = le32(&b[4]);
  if (static_cast<uint64_t>(riff_size) + 8 > b.size()) h.complete = false;
  size_t pos = 12;
  while (pos + 8 <= b.size()) {
    const uint8_t* fourcc = &b[pos];
    const uint32_t size = le32(&b[pos + 4]);
    const size_t data = pos + 8;
    const size_t available = b.size() - data;
    if (std::memcmp(fourcc, "VP8X", 4) == 0 && size >= 10 && available >= 10) {
      h.width = 1 + le24(&b[data + 4]);
      h.height = 1 + le24(&b[data + 7]);
    } else if (std::memcmp(fourcc, "VP8 ", 4) == 0 && available >= 10 && h.width == 0) {
      h.width = le16(&b[data + 6]) & 0x3FFF;
      h.height = le16(&b[data + 8]) & 0x3FFF;
    } else if (std::memcmp(fourcc, "VP8L", 4) == 0 && available >= 5 && h.width == 0) {
      const uint32_t bits = le32(&b[data + 1]);
      h.width = 1 + (bits & 0x3FFF);
      h.height = 1 + ((bits >> 14) & 0x3FFF);
    } else if (std::memcmp(fourcc, "EXIF", 4) == 0 && size <= available) {
      // Some writers keep the "Exif\0\0" prefix of JPEG's APP1.
      const uint8_t* e = &b[data];
      size_t n = size;
      if (n >= 6 && std::memcmp(e, "Exif\0\0", 6) == 0) e += 6, n -= 6;
      h.orientation = exif_orientation_from_tiff(e, n);
    }
    if (size > available) { h.complete = false; return; }
    pos = data + size + (size & 1);
  }
}

}  // namespace

int exif_orientation_from_tiff(const uint8_t* d, size_t n) {
  if (n < 8) return 1;
  bool big;
  if (d[0] == 'I' && d[1] == 'I') big = false;
  else if (d[0] == 'M' && d[1] == 'M') big = true;
  else return 1;
  auto u16 = [&](size_t at) { return big ? be16(d + at) : le16(d + at); };
  auto u32 = [&](size_t at) { return big ? be32(d + at) : le32(d + at); };
  const uint32_t ifd = u32(4);
  if (ifd + 2 > n) return 1;
  const uint16_t entries = u16(ifd);
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + size_t{i} * 12;
    if (e + 12 > n) return 1;
    if (u16(e) == 0x0112) {
      const uint16_t type = u16(e + 2);
      const uint32_t value = type == 3 ? u16(e + 8) : (type == 4 ? u32(e + 8) : 1);
      return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
    }
  }
  return 1;
}

ImageHeader parse_image_header(const std::vector<uint8_t>& b) {
  ImageHeader h;
  if (starts_with(b, "\x89PNG\r\n\x1a\n")) {
    h.container = ImageContainer::kPng;
    parse_png(b, h);
  } else if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    h.container = ImageContainer::kJpeg;
    parse_jpeg(b, h);
  } else if (starts_with(b, "RIFF") && starts_with(b, "WEBP", 8)) {
    h.container = ImageContainer::kWebp;
    parse_webp(b, h);
  } else if ((starts_with(b, "GIF87a") || starts_with(b, "GIF89a")) && b.size() >= 10) {
    h.container = ImageContainer::kGif;
    h.width = le16(&b[6]);
    h.height = le16(&b[8]);
  } else if (starts_with(b, "BM") && b.size() >= 26) {
    h.container = ImageContainer::kBmp;
    const int32_t w = static_cast<int32_t>(le32(&b[18])), hh = static_cast<int32_t>(le32(&b[22]));
    h.width = w < 0 ? -int64_t{w} : w;
    h.height = hh < 0 ? -int64_t{hh} : hh;
  }
  return h;
}

const char* image_container_name(ImageContainer c) {
  switch (c) {
    case ImageContainer::kPng: return "PNG";
    case ImageContainer::kJpeg: return "JPEG";
    case ImageContainer::kWebp: return "WebP";
    case ImageContainer::kGif: return "GIF";
    case ImageContainer::kBmp: return "BMP";
    default: return "unknown";
  }
}

}  // namespace orochi::io
