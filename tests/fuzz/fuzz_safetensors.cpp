// libFuzzer entry point for the safetensors parser (built only with -DOROCHI_FUZZ=ON under clang;
// ASan is on, so any out-of-bounds read of the input is a crash). Run, e.g.:
//   ./fuzz_safetensors -max_total_time=60 corpus/
// Every input must come back as a file or a Status; a file must only describe bytes of the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/log.h"
#include "weights/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace orochi;
  // libFuzzer's buffer is exactly `size` bytes under ASan; copy so the owner really owns the bytes
  // the returned tensors view, as it would for a mapped file.
  auto owned = std::shared_ptr<uint8_t[]>(new uint8_t[size > 0 ? size : 1]);
  if (size > 0) std::memcpy(owned.get(), data, size);
  const auto file = weights::SafetensorsFile::parse(owned, owned.get(), size, "fuzz-input");
  if (!file.has_value()) return 0;

  const weights::SafetensorsFile& f = **file;
  const uint8_t* end = owned.get() + size;
  if (f.data_section() < owned.get() + 8 || f.data_section() + f.data_bytes() > end) std::abort();
  for (const weights::TensorInfo& info : f.tensors()) {
    if (info.begin > info.end || info.end > f.data_bytes()) std::abort();
    const Tensor t = f.tensor(info);
    if (t.nbytes() != info.nbytes()) std::abort();
    const auto* p = static_cast<const uint8_t*>(t.raw_data());
    volatile uint8_t sink = 0;  // read every byte so ASan checks the whole range
    for (size_t i = 0; i < t.nbytes(); ++i) sink = sink ^ p[i];
  }
  return 0;
}
