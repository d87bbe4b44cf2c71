// LoRAs on the H3 transformer: synthetic files written here in the four published formats map to the
// same deltas; the merge equals an explicit W + s·B·A; strength 0 leaves the weights bit-identical;
// alphas from metadata; full-rank .diff / .diff_b deltas; bad files, keys and shapes are refused
// naming the key; a demo run with a LoRA (or a .diff file) changes the video.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "support/compare.h"
#include "support/demo_request.h"
#include "engine/engine.h"
#include "models/h3/lora.h"
#include "support/temp_dir.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

using Tensors = std::vector<std::pair<std::string, Tensor>>;

Tensor random_tensor(const Shape& shape, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 0.3f);
  Tensor t = Tensor::empty(shape, DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

Tensor cat_rows(const std::vector<Tensor>& parts) {
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.dim(0);
  Tensor out = Tensor::empty({rows, parts[0].dim(1)}, DType::kF32);
  size_t at = 0;
  for (const Tensor& p : parts) {
    std::memcpy(out.data<float>() + at, p.data<float>(), p.nbytes());
    at += static_cast<size_t>(p.numel());
  }
  return out;
}

// q, k, v [heads·hd, r] -> per-head interleaved [heads·(q|k|v)·hd, r].
Tensor interleave(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads) {
  const int64_t hd = q.dim(0) / heads;
  std::vector<Tensor> parts;
  for (int64_t h = 0; h < heads; ++h)
    for (const Tensor* t : {&q, &k, &v}) parts.push_back(t->slice(0, h * hd, (h + 1) * hd).contiguous());
  return cat_rows(parts);
}

Tensor swap_halves(const Tensor& t) {
  const int64_t half = t.dim(0) / 2;
  return cat_rows({t.slice(0, half, 2 * half).contiguous(), t.slice(0, 0, half).contiguous()});
}

// The LoRA every format encodes: block 0's q/k/v (one shared A, rank 4, alpha 2), block 0's fc1
// (rank 3, alpha 6), block 1's adaln (rank 2, no alpha), refiner 0's fc2 and the final AdaLN (rank 5).
struct Reference {
  Tensor qkv_a, q_b, k_b, v_b, fc1_a, fc1_b, adaln_a, adaln_b, fc2_a, fc2_b, out_a, out_b;
};

Reference make_reference(const h3::H3Config& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t H = c.hidden_size, inner = c.inner_dim(), F = c.ffn_dim, T = c.time_embed_dim;
  Reference r;
  r.qkv_a = random_tensor({4, H}, rng);
  r.q_b = random_tensor({inner, 4}, rng);
  r.k_b = random_tensor({inner, 4}, rng);
  r.v_b = random_tensor({inner, 4}, rng);
  r.fc1_a = random_tensor({3, H}, rng);
  r.fc1_b = random_tensor({2 * F, 3}, rng);  // our order [value; gate]
  r.adaln_a = random_tensor({2, T}, rng);
  r.adaln_b = random_tensor({6 * h3::kModalities * H, 2}, rng);
  r.fc2_a = random_tensor({5, F}, rng);
  r.fc2_b = random_tensor({H, 5}, rng);
  r.out_a = random_tensor({5, T}, rng);
  r.out_b = random_tensor({2 * H, 5}, rng);
  return r;
}

Tensor scalar(float v) { return Tensor::from_floats({v}, {}); }

enum class Fmt { kDiffusers, kOriginal, kDiffSynth, kKohya };

Tensors write_format(const Reference& r, const h3::H3Config& c, Fmt f) {
  Tensors t;
  const int64_t heads = c.num_attention_heads;
  auto pair = [&](const std::string& diffusers, const std::string& original, const Tensor& a, const Tensor& b,
                  std::optional<float> alpha) {
    std::string m, da, ub, al;
    switch (f) {
      case Fmt::kDiffusers: m = "transformer." + diffusers, da = ".lora_A.weight", ub = ".lora_B.weight"; break;
      case Fmt::kOriginal: m = "diffusion_model." + original, da = ".lora_A.weight", ub = ".lora_B.weight"; break;
      case Fmt::kDiffSynth: m = original, da = ".lora_A.default.weight", ub = ".lora_B.default.weight"; break;
      case Fmt::kKohya:
        m = "lora_unet_" + original, da = ".lora_down.weight", ub = ".lora_up.weight";
        for (char& ch : m)
          if (ch == '.') ch = '_';
        break;
    }
    t.emplace_back(m + da, a);
    t.emplace_back(m + ub, b);
    if (alpha) t.emplace_back(m + ".alpha", scalar(*alpha));
  };
  if (f == Fmt::kDiffusers) {
    pair("transformer_blocks.0.attn.to_q", "", r.qkv_a, r.q_b, 2.0f);
    pair("transformer_blocks.0.attn.to_k", "", r.qkv_a, r.k_b, 2.0f);
    pair("transformer_blocks.0.attn.to_v", "", r.qkv_a, r.v_b, 2.0f);
  } else {
    const Tensor fused = f == Fmt::kDiffSynth ? interleave(r.q_b, r.k_b, r.v_b, heads) : cat_rows({r.q_b, r.k_b, r.v_b});
    pair("", "blocks.0.attn.qkv_proj", r.qkv_a, fused, 2.0f);
  }
  pair("transformer_blocks.0.ff.net.0.proj", "blocks.0.mlp.fc1", r.fc1_a,
       f == Fmt::kDiffusers ? r.fc1_b : swap_halves(r.fc1_b), 6.0f);
  pair("transformer_blocks.1.adaln_proj.linear", "blocks.1.adaln_proj.linear", r.adaln_a, r.adaln_b, std::nullopt);
  pair("token_refiner.refiner_blocks.0.ff.net.2", "token_refiner.blocks.0.mlp.fc2", r.fc2_a, r.fc2_b, 5.0f);
  pair("norm_out.linear", "final_layer.adaln_proj.linear", r.out_a, r.out_b, 10.0f);
  return t;
}

std::string write(const testing::TempDir& dir, const std::string& name, const Tensors& t) {
  const std::string path = dir.file(name);
  EXPECT_TRUE(weights::write_safetensors(path, t).is_ok());
  return path;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

h3::H3Config config() { return h3::H3Config::tiny_demo(); }

TEST(H3Lora, EveryFormatMapsToTheSameDeltas) {
  const h3::H3Config c = config();
  ASSERT_GE(c.num_attention_heads, 2);  // so interleaved and thirds differ
  const Reference ref = make_reference(c, 1);
  testing::TempDir dir("lora");
  std::map<std::string, h3::LoraDelta> want;
  const std::pair<Fmt, h3::LoraFormat> formats[] = {{Fmt::kDiffusers, h3::LoraFormat::kDiffusers},
                                                    {Fmt::kOriginal, h3::LoraFormat::kOriginal},
                                                    {Fmt::kDiffSynth, h3::LoraFormat::kDiffSynth},
                                                    {Fmt::kKohya, h3::LoraFormat::kKohya}};
  for (const auto& [fmt, format] : formats) {
    const std::string path = write(dir, "f" + std::to_string(static_cast<int>(fmt)) + ".safetensors", write_format(ref, c, fmt));
    Expected<h3::H3Lora> lora = h3::read_lora(path, c);
    ASSERT_TRUE(lora.has_value()) << lora.status().to_string();
    EXPECT_EQ(lora->format, format) << h3::lora_format_name(lora->format);
    ASSERT_EQ(lora->deltas.size(), 7u);
    std::map<std::string, h3::LoraDelta> got;
    for (const h3::LoraDelta& d : lora->deltas) got[d.param] = d;
    if (want.empty()) {
      want = got;
      EXPECT_FLOAT_EQ(want.at("transformer_blocks.0.attn.to_k.weight").scale, 0.5f);   // alpha 2 / rank 4
      EXPECT_FLOAT_EQ(want.at("transformer_blocks.0.ff.net.0.proj.weight").scale, 2.0f);  // 6 / 3
      EXPECT_FLOAT_EQ(want.at("transformer_blocks.1.adaln_proj.linear.weight").scale, 1.0f);  // no alpha
      EXPECT_TRUE(same_bytes(want.at("transformer_blocks.0.attn.to_v.weight").up, ref.v_b));
      continue;
    }
    for (const auto& [param, d] : want) {
      ASSERT_TRUE(got.count(param)) << h3::lora_format_name(format) << " lacks " << param;
      EXPECT_TRUE(same_bytes(got.at(param).down, d.down)) << h3::lora_format_name(format) << " " << param;
      EXPECT_TRUE(same_bytes(got.at(param).up, d.up)) << h3::lora_format_name(format) << " " << param;
      EXPECT_EQ(got.at(param).scale, d.scale) << param;
    }
  }
}

TEST(H3Lora, MergeEqualsExplicitUpdateAndLeavesOthersAlone) {
  const h3::H3Config c = config();
  testing::TempDir dir("lora");
  const std::string path = write(dir, "l.safetensors", write_format(make_reference(c, 2), c, Fmt::kKohya));
  Expected<h3::H3Lora> lora = h3::read_lora(path, c);
  ASSERT_TRUE(lora.has_value()) << lora.status().to_string();
  const h3::H3Weights base = h3::random_weights(c, 9);
  h3::H3Weights merged = h3::random_weights(c, 9);
  const float strength = 0.7f;
  ASSERT_TRUE(h3::merge_lora(merged, *lora, strength).is_ok());
  std::map<std::string, const h3::LoraDelta*> by_param;
  for (const h3::LoraDelta& d : lora->deltas) by_param[d.param] = &d;
  h3::H3Weights base_copy = base;
  auto before = h3::linear_weights(base_copy);
  auto after = h3::linear_weights(merged);
  ASSERT_EQ(before.size(), after.size());
  int changed = 0;
  for (size_t p = 0; p < before.size(); ++p) {
    const Tensor& w0 = *before[p].second;
    const Tensor& w1 = *after[p].second;
    auto it = by_param.find(before[p].first);
    if (it == by_param.end()) {
      EXPECT_TRUE(same_bytes(w0, w1)) << before[p].first << " changed without a LoRA pair";
      continue;
    }
    ++changed;
    const h3::LoraDelta& d = *it->second;
    const int64_t rows = w0.dim(0), cols = w0.dim(1), r = d.down.dim(0);
    double err = 0, norm = 0;
    for (int64_t o = 0; o < rows; ++o)
      for (int64_t i = 0; i < cols; ++i) {
        double ba = 0;
        for (int64_t k = 0; k < r; ++k) ba += double(d.up.data<float>()[o * r + k]) * d.down.data<float>()[k * cols + i];
        const double want = w0.data<float>()[o * cols + i] + double(strength) * d.scale * ba;
        err += (w1.data<float>()[o * cols + i] - want) * (w1.data<float>()[o * cols + i] - want);
        norm += want * want;
      }
    EXPECT_LE(std::sqrt(err / norm), 1e-6) << before[p].first;
  }
  EXPECT_EQ(changed, 7);
}

// The GPU path keeps the checkpoint's bf16 views on the host: their merge stays bf16 and equals the
// f32 merge rounded once (what uploading that f32 merge would give the GPU), bit for bit.
TEST(H3Lora, Bf16WeightsMergeToTheRoundedF32Merge) {
  const h3::H3Config c = config();
  testing::TempDir dir("lora");
  const std::string path = write(dir, "l.safetensors", write_format(make_reference(c, 5), c, Fmt::kDiffusers));
  Expected<h3::H3Lora> lora = h3::read_lora(path, c);
  ASSERT_TRUE(lora.has_value()) << lora.status().to_string();
  h3::H3Weights f32 = h3::random_weights(c, 11), bf16 = h3::random_weights(c, 11);
  auto to_bf16 = h3::linear_weights(bf16), rounded = h3::linear_weights(f32);
  for (size_t p = 0; p < to_bf16.size(); ++p) {
    *to_bf16[p].second = to_bf16[p].second->to(DType::kBF16);
    *rounded[p].second = to_bf16[p].second->to(DType::kF32);  // the same values in f32
  }
  ASSERT_TRUE(h3::merge_lora(f32, *lora, 1.3f).is_ok());
  ASSERT_TRUE(h3::merge_lora(bf16, *lora, 1.3f).is_ok());
  auto a = h3::linear_weights(f32), b = h3::linear_weights(bf16);
  int merged = 0;
  for (size_t p = 0; p < a.size(); ++p) {
    ASSERT_EQ(b[p].second->dtype(), DType::kBF16) << b[p].first;
    EXPECT_TRUE(same_bytes(a[p].second->to(DType::kBF16), *b[p].second)) << b[p].first;
    merged += a[p].second->dtype() == DType::kF32 ? 1 : 0;
  }
  EXPECT_EQ(merged, static_cast<int>(a.size()));
}

TEST(H3Lora, StrengthZeroIsBitIdentical) {
  const h3::H3Config c = config();
  testing::TempDir dir("lora");
  const std::string path = write(dir, "l.safetensors", write_format(make_reference(c, 3), c, Fmt::kOriginal));
  Expected<h3::H3Lora> lora = h3::read_lora(path, c);
  ASSERT_TRUE(lora.has_value()) << lora.status().to_string();
  h3::H3Weights base = h3::random_weights(c, 4), merged = h3::random_weights(c, 4);
  ASSERT_TRUE(h3::merge_lora(merged, *lora, 0.0f).is_ok());
  auto before = h3::linear_weights(base);
  auto after = h3::linear_weights(merged);
  for (size_t p = 0; p < before.size(); ++p) EXPECT_TRUE(same_bytes(*before[p].second, *after[p].second)) << before[p].first;
  EXPECT_FALSE(h3::merge_lora(merged, *lora, std::nanf("")).is_ok());
}

TEST(H3Lora, LinearWeightsCoverEveryMatrixOfTheModel) {
  const h3::H3Config c = config();
  h3::H3Weights w = h3::random_weights(c, 1);
  std::map<std::string, Shape> listed;
  for (auto& [name, t] : h3::linear_weights(w)) listed[name] = t->shape();
  size_t matrices = 0;
  for (const h3::ParamSpec& spec : h3::h3_parameters(c)) {
    if (spec.shape.size() != 2) continue;
    ++matrices;
    ASSERT_TRUE(listed.count(spec.name)) << spec.name;
    EXPECT_EQ(listed[spec.name], spec.shape) << spec.name;
  }
  EXPECT_EQ(matrices, listed.size());
}

// The error for `tensors` (written as a LoRA), which must name `needle`.
void expect_refused(const Tensors& tensors, const std::string& needle, h3::LoraPartition partition = h3::LoraPartition::kTransformer) {
  testing::TempDir dir("lora");
  const std::string path = write(dir, "bad.safetensors", tensors);
  Expected<h3::H3Lora> lora = h3::read_lora(path, config(), partition);
  ASSERT_FALSE(lora.has_value()) << "accepted a LoRA that should name " << needle;
  EXPECT_NE(lora.status().message().find(needle), std::string::npos) << lora.status().message();
}

TEST(H3Lora, RefusesBadFilesKeysAndShapes) {
  const h3::H3Config c = config();
  std::mt19937_64 rng(5);
  const int64_t H = c.hidden_size, inner = c.inner_dim();
  const Tensor a = random_tensor({4, H}, rng), b = random_tensor({inner, 4}, rng);
  const std::string q = "transformer.transformer_blocks.0.attn.to_q";
  expect_refused({{q + ".lora_A.weight", a}, {q + ".lora_B.weight", b}, {"transformer.stray", a}}, "transformer.stray");
  expect_refused({{q + ".lora_A.weight", a}}, q + ".lora_A.weight");  // no B
  expect_refused({{q + ".lora_A.weight", a}, {q + ".lora_B.weight", b}, {q + ".alpha", scalar(0)}}, q + ".alpha");
  const std::string bogus = "transformer.transformer_blocks.99.attn.to_q";
  expect_refused({{bogus + ".lora_A.weight", a}, {bogus + ".lora_B.weight", b}}, bogus + ".lora_B.weight");
  expect_refused({{q + ".lora_A.weight", random_tensor({4, H + 1}, rng)}, {q + ".lora_B.weight", b}}, q + ".lora_A.weight");
  expect_refused({{q + ".lora_A.weight", a}, {q + ".lora_B.weight", random_tensor({inner + 2, 4}, rng)}}, q + ".lora_B.weight");
  expect_refused({{q + ".lora_A.weight", a}, {q + ".lora_B.weight", random_tensor({inner, 3}, rng)}}, "ranks");
  const std::string ref = "transformer_ref.transformer_blocks.0.attn.to_q";
  expect_refused({{ref + ".lora_A.weight", a}, {ref + ".lora_B.weight", b}}, "transformer_ref/");
  expect_refused({{q + ".lora_A.weight", a}, {q + ".lora_B.weight", b}}, "transformer/", h3::LoraPartition::kTransformerRef);
  const std::string k = "transformer.transformer_blocks.0.attn.to_k";
  expect_refused({{q + ".lora_A.weight", a}, {q + ".lora_B.weight", b}, {k + ".lora_down.weight", a}, {k + ".lora_up.weight", b}},
                 "mixes two key conventions");
  const std::string fused = "diffusion_model.blocks.0.attn.qkv_proj";
  expect_refused({{fused + ".lora_A.weight", a}, {fused + ".lora_B.weight", b}}, fused + ".lora_B.weight");  // B not 3x
  expect_refused({{fused + ".lora_A.weight", a}, {fused + ".lora_B.weight", random_tensor({3 * inner, 4}, rng)},
                  {q + ".lora_A.weight", a}, {q + ".lora_B.weight", b}},
                 "both target transformer_blocks.0.attn.to_q.weight");
  Expected<h3::H3Lora> missing = h3::read_lora("/nonexistent/lora.safetensors", c);
  EXPECT_FALSE(missing.has_value());
}


// The alphas a file's __metadata__ gives (diffusers' lora_adapter_metadata, a network alpha), and
// their refusals naming the entry.
TEST(H3Lora, MetadataAlphasAndTheirErrors) {
  const h3::H3Config c = config();
  std::mt19937_64 rng(8);
  const int64_t H = c.hidden_size, inner = c.inner_dim(), F = c.ffn_dim;
  const std::string q = "transformer.transformer_blocks.0.attn.to_q", ff = "transformer.transformer_blocks.1.ff.net.2";
  const Tensors t = {{q + ".lora_A.weight", random_tensor({4, H}, rng)}, {q + ".lora_B.weight", random_tensor({inner, 4}, rng)},
                     {ff + ".lora_A.weight", random_tensor({2, F}, rng)}, {ff + ".lora_B.weight", random_tensor({H, 2}, rng)}};
  testing::TempDir dir("lora");
  auto scales = [&](const std::map<std::string, std::string>& meta) -> Expected<std::map<std::string, float>> {
    const std::string path = dir.file("m.safetensors");
    EXPECT_TRUE(weights::write_safetensors(path, t, meta).is_ok());
    OROCHI_ASSIGN_OR_RETURN(const h3::H3Lora lora, h3::read_lora(path, c));
    std::map<std::string, float> out;
    for (const h3::LoraDelta& d : lora.deltas) out[d.param] = d.scale;
    return out;
  };
  const std::string qw = "transformer_blocks.0.attn.to_q.weight", fw = "transformer_blocks.1.ff.net.2.weight";
  auto none = scales({});
  ASSERT_TRUE(none.has_value()) << none.status().to_string();
  EXPECT_EQ((*none)[qw], 1.0f);
  auto network = scales({{"alpha", "8"}});
  ASSERT_TRUE(network.has_value()) << network.status().to_string();
  EXPECT_EQ((*network)[qw], 2.0f);  // 8 / 4
  EXPECT_EQ((*network)[fw], 4.0f);  // 8 / 2
  // PEFT's alpha_pattern matches the module name or a suffix of it after a dot: "blocks.0.attn.to_q"
  // is not a dotted suffix of "transformer_blocks.0.attn.to_q".
  const std::string peft = R"({"transformer.lora_alpha": 2, "transformer.r": 4,
      "transformer.alpha_pattern": {"blocks\\.0\\.attn\\.to_q": 9, "1\\.ff\\.net\\.2": 6, "to_k": 1},
      "transformer.use_rslora": false})";
  auto patterned = scales({{"lora_adapter_metadata", peft}, {"alpha", "100"}});
  ASSERT_TRUE(patterned.has_value()) << patterned.status().to_string();
  EXPECT_EQ((*patterned)[qw], 0.5f);  // lora_alpha 2 / 4 (lora_adapter_metadata wins over "alpha")
  EXPECT_EQ((*patterned)[fw], 3.0f);  // 6 / 2
  auto rslora = scales({{"lora_adapter_metadata", R"({"transformer.lora_alpha": 2, "transformer.use_rslora": true})"}});
  ASSERT_TRUE(rslora.has_value()) << rslora.status().to_string();
  EXPECT_EQ((*rslora)[qw], 1.0f);  // 2 / sqrt(4)

  auto refused = [&](const std::map<std::string, std::string>& meta, const std::string& needle) {
    auto s = scales(meta);
    ASSERT_FALSE(s.has_value()) << "accepted metadata that should name " << needle;
    EXPECT_NE(s.status().message().find(needle), std::string::npos) << s.status().message();
  };
  refused({{"alpha", "eight"}}, "__metadata__ \"alpha\" is \"eight\"");
  refused({{"lora_adapter_metadata", "{not json"}}, "lora_adapter_metadata is not a JSON object");
  refused({{"lora_adapter_metadata", R"({"transformer.lora_alpha": -1})"}}, "'transformer.lora_alpha'");
  refused({{"lora_adapter_metadata", R"({"transformer.use_dora": true})"}}, "DoRA");
  refused({{"lora_adapter_metadata", R"({"transformer.alpha_pattern": {"to_q[": 2}})"}}, "'to_q['");
}


// ComfyUI's full-rank deltas: MODULE.diff (weight += strength · diff, a linear's or a norm's) and
// MODULE.diff_b (bias += strength · diff_b), in the original names (fused qkv in thirds, fc1 swapped),
// beside a LoRA pair on the same module; attach_lora merges them too.
TEST(H3Lora, FullRankDiffsAddStrengthTimesTheDelta) {
  const h3::H3Config c = config();
  std::mt19937_64 rng(21);
  const int64_t H = c.hidden_size, inner = c.inner_dim(), F = c.ffn_dim, hd = c.attention_head_dim;
  const h3::H3Weights base = h3::random_weights(c, 21);
  const Tensor qd = random_tensor({inner, H}, rng), kd = random_tensor({inner, H}, rng), vd = random_tensor({inner, H}, rng);
  const Tensor fc1d = random_tensor({2 * F, H}, rng);  // our order [value; gate]
  const Tensor adaln_bd = random_tensor({base.blocks[0].adaln.bias.dim(0)}, rng);
  const Tensor normd = random_tensor({H}, rng), qnormd = random_tensor({hd}, rng);
  const Tensor video_bd = random_tensor({base.proj_out.bias.dim(0)}, rng);
  const Tensor a = random_tensor({2, H}, rng), b = random_tensor({3 * inner, 2}, rng);
  const std::string m = "diffusion_model.";
  const Tensors file = {{m + "blocks.0.attn.qkv_proj.diff", cat_rows({qd, kd, vd})},
                        {m + "blocks.0.attn.qkv_proj.lora_A.weight", a},
                        {m + "blocks.0.attn.qkv_proj.lora_B.weight", b},
                        {m + "blocks.1.mlp.fc1.diff", swap_halves(fc1d)},
                        {m + "blocks.0.adaln_proj.linear.diff_b", adaln_bd},
                        {m + "final_layer.norm.diff", normd},
                        {m + "blocks.0.attn.q_norm.diff", qnormd},
                        {m + "final_layer.video_out.diff_b", video_bd}};
  testing::TempDir dir("lora");
  Expected<h3::H3Lora> lora = h3::read_lora(write(dir, "diff.safetensors", file), c);
  ASSERT_TRUE(lora.has_value()) << lora.status().to_string();
  EXPECT_EQ(lora->format, h3::LoraFormat::kOriginal);
  EXPECT_EQ(lora->deltas.size(), 3u);
  EXPECT_EQ(lora->full.size(), 8u);

  const float s = 0.6f;
  auto plus = [&](const Tensor& w, const Tensor& d) {  // w + s · d
    Tensor out = w.to(DType::kF32).clone();
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] += s * d.data<float>()[i];
    return out;
  };
  for (const bool unmerged : {false, true}) {
    SCOPED_TRACE(unmerged ? "attach_lora" : "merge_lora");
    h3::H3Weights w = base;
    ASSERT_TRUE((unmerged ? h3::attach_lora(w, *lora, s) : h3::merge_lora(w, *lora, s)).is_ok());
    Tensor want_k = plus(base.blocks[0].attn.to_k.weight, kd);
    if (!unmerged)  // + the LoRA pair's s · B_k·A (B_k: the fused B's second third; no alpha: scale 1)
      for (int64_t o = 0; o < inner; ++o)
        for (int64_t i = 0; i < H; ++i)
          for (int64_t k = 0; k < 2; ++k)
            want_k.data<float>()[o * H + i] += s * b.data<float>()[(inner + o) * 2 + k] * a.data<float>()[k * H + i];
    EXPECT_TENSOR_CLOSE(w.blocks[0].attn.to_k.weight, want_k, unmerged ? 0.0 : 1e-6);
    EXPECT_TENSOR_CLOSE(w.blocks[1].ff_in.weight, plus(base.blocks[1].ff_in.weight, fc1d), 0.0);
    EXPECT_TENSOR_CLOSE(w.blocks[0].adaln.bias, plus(base.blocks[0].adaln.bias, adaln_bd), 0.0);
    EXPECT_TENSOR_CLOSE(w.norm_out, plus(base.norm_out, normd), 0.0);
    EXPECT_TENSOR_CLOSE(w.blocks[0].attn.norm_q, plus(base.blocks[0].attn.norm_q, qnormd), 0.0);
    EXPECT_TENSOR_CLOSE(w.proj_out.bias, plus(base.proj_out.bias, video_bd), 0.0);
    EXPECT_TENSOR_CLOSE(w.blocks[0].attn.norm_k, base.blocks[0].attn.norm_k, 0.0);
    EXPECT_EQ(w.blocks[0].attn.to_q.adapters.size(), unmerged ? 1u : 0u);
  }

  // Refusals name the key.
  expect_refused({{m + "blocks.0.attn.qkv_proj.diff", qd}}, "'diffusion_model.blocks.0.attn.qkv_proj.diff' has shape");
  expect_refused({{m + "blocks.0.attn.qkv_proj.diff_b", random_tensor({3 * inner}, rng)}},
                 "'diffusion_model.blocks.0.attn.qkv_proj.diff_b' is a bias delta, but transformer_blocks.0.attn.to_q has no bias");
  expect_refused({{m + "blocks.0.attn.nonexistent.diff", qd}}, "'diffusion_model.blocks.0.attn.nonexistent.diff'");
  expect_refused({{m + "final_layer.norm.diff", Tensor::zeros({2, 3, 4}, DType::kF32)}}, "'diffusion_model.final_layer.norm.diff' has shape");
  expect_refused({{m + "final_layer.norm.diff", normd}, {"transformer.norm_out.norm.diff", normd}}, "both target norm_out.norm.weight");
  expect_refused({{m + "blocks.0.norm1.lora_A.weight", a}, {m + "blocks.0.norm1.lora_B.weight", random_tensor({H, 2}, rng)}},
                 "matches no linear layer");
}


Tensor demo_frames(const std::vector<engine::LoraSource>& loras, nlohmann::json* report = nullptr) {
  engine::ModelSource source;
  source.loras = loras;
  Expected<std::unique_ptr<engine::Engine>> e = engine::Engine::open(source, engine::EngineOptions{});
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  if (!e) return {};
  Expected<engine::RunPlan> plan = (*e)->plan(testing::short_demo_request());
  EXPECT_TRUE(plan.has_value()) << plan.status().to_string();
  Expected<engine::RunResult> run = (*e)->run(*plan);
  EXPECT_TRUE(run.has_value()) << run.status().to_string();
  if (report) *report = engine::report_json(run->report);
  return run->result.frames;
}

TEST(H3Lora, DemoRunWithLoraChangesTheVideoAndStrengthZeroDoesNot) {
  const h3::H3Config c = config();
  testing::TempDir dir("lora");
  const std::string path = write(dir, "l.safetensors", write_format(make_reference(c, 6), c, Fmt::kDiffusers));
  const Tensor plain = demo_frames({});
  nlohmann::json report;
  const Tensor with = demo_frames({{path, 1.0f}}, &report);
  const Tensor zero = demo_frames({{path, 0.0f}});
  ASSERT_TRUE(plain.defined() && with.defined() && zero.defined());
  EXPECT_TRUE(same_bytes(plain, zero));
  EXPECT_FALSE(same_bytes(plain, with));
  ASSERT_EQ(report["loras"].size(), 1u);
  EXPECT_EQ(report["loras"][0]["file"], path);
  EXPECT_EQ(report["loras"][0]["format"], "diffusers");
  EXPECT_EQ(report["loras"][0]["parameters"], 7);

  // A file of full-rank deltas alone goes through --lora the same way.
  std::mt19937_64 rng(31);
  const std::string diff = write(dir, "diff.safetensors", {{"diffusion_model.blocks.0.mlp.fc2.diff",
                                                              random_tensor({c.hidden_size, c.ffn_dim}, rng)}});
  nlohmann::json diff_report;
  EXPECT_FALSE(same_bytes(plain, demo_frames({{diff, 1.0f}}, &diff_report)));
  EXPECT_EQ(diff_report["loras"][0]["parameters"], 1);

  engine::ModelSource bad;
  bad.loras = {{dir.file("missing.safetensors"), 1.0f}};
  EXPECT_FALSE(engine::Engine::open(bad, engine::EngineOptions{}).has_value());
}

}  // namespace
}  // namespace orochi
