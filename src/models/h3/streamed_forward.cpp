#include "models/h3/streamed_forward.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "models/h3/block_forward.h"

namespace orochi::h3 {
namespace {

constexpr size_t kAlign = 64;  // every packed tensor starts on a cache line, as in a fresh Buffer

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Every tensor of a block but the AdaLN projection, in packing order, with its diffusers name;
// an undefined tensor (a bias the block lacks) is passed too and skipped by the callers.
template <typename Block, typename Fn>
void for_each_tensor(Block& b, Fn&& fn) {
  auto linear = [&](const std::string& name, auto& l) {
    fn(name + ".weight", l.weight);
    fn(name + ".bias", l.bias);
  };
  fn("norm1.weight", b.norm1);
  fn("norm2.weight", b.norm2);
  fn("attn.norm_q.weight", b.attn.norm_q);
  fn("attn.norm_k.weight", b.attn.norm_k);
  linear("attn.to_q", b.attn.to_q);
  linear("attn.to_k", b.attn.to_k);
  linear("attn.to_v", b.attn.to_v);
  linear("attn.to_out.0", b.attn.to_out);
  linear("ff.net.0.proj", b.ff_in);
  linear("ff.net.2", b.ff_out);
}

}  // namespace

PackedBlockLayout packed_block_layout(const BlockWeights& b) {
  PackedBlockLayout layout;
  for_each_tensor(b, [&](const std::string& name, const Tensor& t) {
    if (!t.defined()) return;
    layout.entries.push_back({name, t.shape(), t.dtype(), layout.bytes});
    layout.bytes = align_up(layout.bytes + t.nbytes());
  });
  return layout;
}

Expected<std::vector<std::byte>> pack_block(const BlockWeights& b, const PackedBlockLayout& layout) {
  std::vector<std::pair<std::string, const Tensor*>> present;  // in packing order, like the layout
  for_each_tensor(b, [&](const std::string& name, const Tensor& t) {
    if (t.defined()) present.emplace_back(name, &t);
  });
  auto has = [&](const std::string& name) {
    return std::any_of(present.begin(), present.end(), [&](const auto& p) { return p.first == name; });
  };
  for (const PackedBlockLayout::Entry& e : layout.entries)
    if (!has(e.name)) return shape_mismatch(e.name + " is missing (blocks must all have the same tensors)");
  if (present.size() != layout.entries.size())
    for (const auto& [name, t] : present)
      if (std::none_of(layout.entries.begin(), layout.entries.end(), [&](const auto& e) { return e.name == name; }))
        return shape_mismatch(name + " is not in the packed block layout (blocks must all have the same tensors)");
  std::vector<std::byte> bytes(layout.bytes);
  for (size_t i = 0; i < present.size(); ++i) {
    const PackedBlockLayout::Entry& e = layout.entries[i];
    const Tensor& t = *present[i].second;
    if (t.shape() != e.shape || t.dtype() != e.dtype)
      return shape_mismatch(e.name + " is " + t.describe() + " but the packed block layout has " +
                            dtype_name(e.dtype) + shape_to_string(e.shape) + " (blocks must all have the same shapes)");
    const Tensor dense = t.contiguous();
    std::memcpy(bytes.data() + e.offset, dense.raw_data(), dense.nbytes());
  }
  return bytes;
}

BlockWeights view_packed_block(const std::shared_ptr<Buffer>& bytes, const PackedBlockLayout& layout) {
  OROCHI_CHECK(bytes && bytes->size() >= layout.bytes, "a packed block of ", layout.bytes, " bytes in a buffer of ",
               bytes ? bytes->size() : 0);
  BlockWeights b;
  size_t next = 0;
  for_each_tensor(b, [&](const std::string& name, Tensor& t) {
    if (next < layout.entries.size() && layout.entries[next].name == name) {
      const PackedBlockLayout::Entry& e = layout.entries[next++];
      t = Tensor::from_buffer(bytes, e.offset, e.shape, e.dtype);
    }
  });
  OROCHI_CHECK(next == layout.entries.size(), "packed block layout out of the packing order at ", next);
  return b;
}

Expected<std::unique_ptr<StreamedBlocks>> StreamedBlocks::create(H3Weights& w, const std::vector<bool>& streamed,
                                                                 int slots, weights::HostCopyOptions options) {
  const size_t n = w.blocks.size();
  if (streamed.size() != n)
    return invalid_argument("the streamed-block list has " + std::to_string(streamed.size()) + " entries for " +
                            std::to_string(n) + " transformer blocks");
  std::unique_ptr<StreamedBlocks> s(new StreamedBlocks());
  s->tier_.resize(n);
  // Pack first, so a refusal leaves `w` as it was.
  for (size_t i = 0; i < n; ++i) {
    if (!streamed[i]) continue;
    if (s->layout_.entries.empty()) s->layout_ = packed_block_layout(w.blocks[i]);
    Expected<std::vector<std::byte>> packed = pack_block(w.blocks[i], s->layout_);
    if (!packed) return packed.status().with_context("packing block " + std::to_string(i) + " for streaming");
    s->tier_[i] = std::move(packed).value();
  }
  std::vector<std::span<const std::byte>> spans(s->tier_.begin(), s->tier_.end());
  OROCHI_ASSIGN_OR_RETURN(s->engine_, weights::HostCopyEngine::create(std::move(spans), slots, std::move(options)));
  OROCHI_ASSIGN_OR_RETURN(weights::BlockStreamer streamer, weights::BlockStreamer::create(streamed, slots, *s->engine_));
  s->streamer_.emplace(std::move(streamer));
  s->resident_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    BlockWeights& b = w.blocks[i];
    LinearWeights adaln = std::move(b.adaln);
    if (!streamed[i]) s->resident_[i] = std::move(b);
    b = BlockWeights{};
    b.adaln = std::move(adaln);
  }
  return s;
}

Expected<BlockWeights> StreamedBlocks::acquire(int block) {
  OROCHI_ASSIGN_OR_RETURN(const int slot, streamer_->acquire(block));
  if (slot < 0) return resident_[block];
  return view_packed_block(engine_->slot_buffer(slot), layout_);
}

uint64_t StreamedBlocks::host_tier_bytes() const {
  uint64_t bytes = 0;
  for (const auto& b : tier_) bytes += b.size();
  return bytes;
}

Expected<H3Outputs> forward_streamed(const H3Weights& w, StreamedBlocks& blocks, const H3Inputs& in,
                                     const ModulationTables& tables, bool prefetch_next_pass,
                                     const H3Observer& observer) {
  const H3Config& c = w.config;
  OROCHI_RETURN_IF_ERROR(validate_inputs(c, in, tables.timesteps.numel()));
  if (blocks.num_blocks() != c.num_layers || tables.blocks.size() != static_cast<size_t>(c.num_layers))
    return invalid_argument("the model has " + std::to_string(c.num_layers) + " transformer blocks, but " +
                            std::to_string(blocks.num_blocks()) + " are streamed and " +
                            std::to_string(tables.blocks.size()) + " have modulation tables");
  const BlockInputs block_in = block_inputs(c, in, observer);
  // The first copies run while the refiner and the embedders compute.
  OROCHI_RETURN_IF_ERROR(blocks.begin_pass(prefetch_next_pass));
  Tensor h = embed_sequence(w, in, observer);  // [S, H]
  for (int i = 0; i < blocks.num_blocks(); ++i) {
    OROCHI_ASSIGN_OR_RETURN(const BlockWeights b, blocks.acquire(i));
    transformer_block(h, b, tables.blocks[i], block_in, c);
    OROCHI_RETURN_IF_ERROR(blocks.release(i));
    if (observer) observer("block." + std::to_string(i), h);
  }
  return output_heads(w, h, in, tables, observer);
}

}  // namespace orochi::h3
