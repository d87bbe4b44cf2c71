// What a still image's bytes say before any pixel is decoded: its format, its size (so an absurd
// size is refused before a decoder allocates for it), whether the file is complete, and its EXIF
// orientation. Pure byte parsing for PNG, JPEG, WebP, GIF and BMP; needs no FFmpeg.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace orochi::io {

enum class ImageContainer { kUnknown, kPng, kJpeg, kWebp, kGif, kBmp };

struct ImageHeader {
  ImageContainer container = ImageContainer::kUnknown;
  int64_t width = 0, height = 0;  // 0 when the header does not say (or is cut short)
  bool complete = true;           // false when the file visibly ends early (no IEND / EOI, short RIFF)
  int orientation = 1;            // EXIF tag 0x0112, 1..8 (1 = as stored, also without EXIF)
};

ImageHeader parse_image_header(const std::vector<uint8_t>& bytes);

const char* image_container_name(ImageContainer c);

// Reads the orientation tag out of a TIFF-structured EXIF block ("II*\0" or "MM\0*" first); 1 when absent
// or malformed.
int exif_orientation_from_tiff(const uint8_t* data, size_t size);

}  // namespace orochi::io
