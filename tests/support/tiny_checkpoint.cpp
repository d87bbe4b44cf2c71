#include "support/tiny_checkpoint.h"

#include "support/checkpoint_copy.h"
#include "support/paths.h"

namespace orochi::testing {

void assemble_tiny_checkpoint(const std::filesystem::path& root, TinyRefPartition ref) {
  namespace fs = std::filesystem;
  const fs::path data = test_data_dir();
  fs::create_directories(root);
  fs::create_directory_symlink(data / "h3_tiny/transformer", root / "transformer");
  if (ref == TinyRefPartition::kSame) fs::create_directory_symlink(data / "h3_tiny/transformer", root / "transformer_ref");
  if (ref == TinyRefPartition::kDistinct) {
    fs::create_directories(root / "transformer_ref");
    write_converted_copy((data / "h3_tiny/transformer").string(), root / "transformer_ref", DType::kBF16);
  }
  fs::create_directory_symlink(data / "h3_fl2va/vae", root / "vae");
  fs::create_directory_symlink(data / "h3_fl2va/audio_vae", root / "audio_vae");
  fs::create_directory_symlink(data / "tokenizer/qwen_bpe", root / "tokenizer");
  fs::create_directory_symlink(data / "h3_fl2va_prompt/text_encoder", root / "text_encoder");
  fs::create_directory_symlink(data / "h3_fl2va_prompt/processor", root / "processor");
}

}  // namespace orochi::testing
