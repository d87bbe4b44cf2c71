#!/usr/bin/env python3
"""Golden generator for the Qwen-style byte-level BPE tokenizer (src/text/tokenizer*.cpp).

The real MiniMax-H3 / Qwen3-VL tokenizer.json cannot be downloaded here, so this script trains a small
one with the Hugging Face `tokenizers` library, configured like Qwen2/Qwen3-VL's tokenizer.json:

  normalizer     NFC
  pre_tokenizer  Sequence[Split(<Qwen regex>, Isolated), ByteLevel(add_prefix_space=False, use_regex=False)]
  model          BPE (no unk, no byte fallback, ignore_merges False), vocab ~3000 over the 256 byte symbols
  decoder        ByteLevel; post_processor ByteLevel (adds nothing)
  added tokens   Qwen's specials (<|endoftext|>, <|im_start|>, ...) after the model vocabulary, as in
                 Qwen's file, plus H3-style non-special added tokens <d> and </d> and Qwen-style
                 non-special, non-normalized <tool_call> / </tool_call>

A second "variant" file reuses the trained model with what Qwen does not use but the C++ loader still
supports: the Llama-3 digit rule \\p{N}{1,3}, merges stored as "a b" strings (the older format),
lstrip / rstrip added tokens, and a normalized added token whose content is not NFC.

Every prompt (77: English, Chinese, Japanese, Korean, emoji with ZWJ and skin tones, combining accents,
whitespace runs, tabs and CRLF, special tokens in the text, contractions, digit runs, a 3000-character
prompt, random characters from all Unicode planes, ...) is encoded with add_special_tokens=False (H3
tokenizes the prompt verbatim) and stored in golden.json with the normalized text, the regex words of
the normalized text, and the decoded ids. The script asserts that decoding gives back NFC(prompt). nfc_cases.json holds NFC checks made with Python's unicodedata, the source of the
C++ tables (scripts/golden/make_unicode_tables.py).

Run (from the repository root; output is byte-identical from run to run):

    python scripts/golden/make_tokenizer_golden.py --out tests/data/tokenizer
"""

import argparse
import json
import os
import random
import unicodedata
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import tokenizers  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers  # noqa: E402
from tokenizers import pre_tokenizers, processors, trainers  # noqa: E402

SEED = 20260824
VOCAB_SIZE = 3000
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = QWEN_PATTERN.replace(r"|\p{N}|", r"|\p{N}{1,3}|")

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>"]

# ---------------------------------------------------------------------------------------------------
# Training corpus

EN_WORDS = ("the a an of to and in is it that was for on are with as his they be at one have this "
            "from or had by hot word but what some we can out other were all there when up use your how "
            "said each she which do their time if will way about many then them write would like so these "
            "her long make thing see him two has look more day could go come did number sound no most "
            "people my over know water than call first who may down side been now find camera slowly "
            "pans across sunlit kitchen woman laughs while man pours coffee rain falls city street night "
            "neon lights reflect puddles dog runs beach waves crash golden hour close shot wide angle "
            "dialogue says quietly voice music soft piano background audio ambient wind birds chirping "
            "frame video second scene cut character wears red jacket looks toward window smiles").split()
ZH_TEXT = ("一个女人在阳光明媚的厨房里笑着，男人倒咖啡。雨夜的城市街道上，霓虹灯倒映在水坑里。镜头缓慢地推进，"
           "背景音乐是轻柔的钢琴声。小狗在海滩上奔跑，海浪拍打着岸边。黄金时刻的特写镜头。他说：“我们走吧！”"
           "她回答：“好的，马上来。”风吹过树林，鸟儿在歌唱。这是一个关于友谊和勇气的故事。")
JA_TEXT = ("カメラがゆっくりと台所を横切る。女性が笑い、男性がコーヒーを注ぐ。夜の街に雨が降り、ネオンが水たまりに"
           "映る。「行こう！」と彼は言った。桜の花びらが風に舞う。東京の駅は人でいっぱいだ。")
EMOJI = ["😀", "😂", "🎬", "🎵", "🌧️", "🐶", "🌊", "☕", "❤️", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "✨", "🔥",
         "🇯🇵", "🇺🇸", "🙏🏻", "🤖", "🎉"]
CODE = ['def f(x):\n    return x * 2\n', 'for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n',
        'if x == "hello":\n    print(f"{x}!")\n', '<div class="row">\n  <span>42</span>\n</div>\n',
        'SELECT id, name FROM users WHERE age >= 18;\n', 'const y = arr.map((v) => v ** 2);\n',
        '#include <vector>\nstd::vector<int> v{1, 2, 3};\n', '{"key": [1, 2.5, -3e10], "ok": true}\n']


def pseudo_words(rng, n):
    """Made-up words from syllables: gives the trainer enough distinct pairs for ~3000 merges."""
    onsets = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br",
              "ch", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "st", "str", "th", "tr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "io", "oo", "ou", "y"]
    codas = ["", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "st", "ck", "x"]
    return ["".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                    for _ in range(rng.randint(1, 3))) for _ in range(n)]


def make_corpus(rng):
    lines = []
    words = pseudo_words(rng, 800)
    for _ in range(4000):  # Zipf-like: early words are frequent, late ones rare
        line = [words[min(int(rng.paretovariate(0.9)) - 1, len(words) - 1)] for _ in range(rng.randint(3, 12))]
        lines.append(" ".join(line) + rng.choice([".", ",", "", "!"]))
    # Common CJK ideographs and kana beyond the sample texts: 3-byte characters teach byte merges.
    cjk = [chr(0x4E00 + i * 7) for i in range(600)] + [chr(c) for c in range(0x3041, 0x3097)]
    for _ in range(1500):
        lines.append("".join(rng.choice(cjk[:rng.randint(50, len(cjk))]) for _ in range(rng.randint(4, 20))))
    for _ in range(3000):
        words = [rng.choice(EN_WORDS) for _ in range(rng.randint(4, 16))]
        if rng.random() < 0.3:
            words[0] = words[0].capitalize()
        if rng.random() < 0.2:
            words.insert(rng.randint(0, len(words)), rng.choice(["don't", "it's", "we're", "I'll", "you've",
                                                                "I'm", "she'd", "THEY'RE"]))
        line = " ".join(words) + rng.choice([".", ",", "!", "?", "...", ";", ":"])
        if rng.random() < 0.2:
            line += " " + rng.choice(EMOJI)
        if rng.random() < 0.15:
            line += " " + str(rng.randint(0, 10 ** rng.randint(1, 9)))
        lines.append(line)
    for _ in range(400):
        i = rng.randint(0, len(ZH_TEXT) - 20)
        lines.append(ZH_TEXT[i:i + rng.randint(5, 40)])
        j = rng.randint(0, len(JA_TEXT) - 20)
        lines.append(JA_TEXT[j:j + rng.randint(5, 30)])
    for _ in range(300):
        lines.append(rng.choice(CODE))
        lines.append(" " * rng.randint(1, 12) + rng.choice(EN_WORDS) + "\t" * rng.randint(0, 3) + "\n" *
                     rng.randint(0, 3))
        lines.append("".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 5))))
        lines.append("%d.%02d%% %s $%d,%03d" % (rng.randint(0, 99), rng.randint(0, 99), rng.choice(EN_WORDS),
                                                rng.randint(1, 999), rng.randint(0, 999)))
    return lines


# ---------------------------------------------------------------------------------------------------
# Tokenizers

def build_tokenizer(corpus):
    tok = Tokenizer(models.BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="",
                               fuse_unk=False, byte_fallback=False, ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False, trim_offsets=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(corpus, trainer=trainer)
    # As in Qwen's file: the specials come after the model vocabulary, not inside it.
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in QWEN_SPECIALS])
    # H3's dialogue markers, added like `tokenizer.add_tokens` does (non-special, normalized), and
    # Qwen-style non-special tokens that match the raw text (normalized=False).
    tok.add_tokens([AddedToken("<d>", special=False, normalized=True),
                    AddedToken("</d>", special=False, normalized=True),
                    AddedToken("<tool_call>", special=False, normalized=False),
                    AddedToken("</tool_call>", special=False, normalized=False)])
    return tok


def make_variant(main_json):
    """The trained model with the options Qwen does not use (see the module docstring)."""
    j = json.loads(main_json)
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = LLAMA3_PATTERN
    merges = j["model"]["merges"]
    j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in merges]
    # Digit merges, so that grouping digits by three changes the ids (the trained model has none:
    # Qwen's pattern never shows it two digits together). The vocabulary stays contiguous and the
    # added tokens move up behind it, where the reference would put them when loading.
    next_id = len(j["model"]["vocab"])
    for left, right in [("1", "2"), ("12", "3"), ("3", "4"), ("4", "5")]:
        assert left + right not in j["model"]["vocab"]
        j["model"]["vocab"][left + right] = next_id
        j["model"]["merges"].append(left + " " + right)
        next_id += 1
    for t in j["added_tokens"]:
        t["id"] = next_id
        next_id += 1
    extra = [("<sep>", dict(lstrip=True, rstrip=False, normalized=False, special=True)),
             ("<pad_r>", dict(lstrip=False, rstrip=True, normalized=False, special=False)),
             ("<both>", dict(lstrip=True, rstrip=True, normalized=True, special=False)),
             # Not NFC as written: a normalized token is matched in its NFC form.
             ("<cafe\u0301>", dict(lstrip=False, rstrip=False, normalized=True, special=False))]
    for content, flags in extra:
        j["added_tokens"].append(dict(id=next_id, content=content, single_word=False, **flags))
        next_id += 1
    return json.dumps(j, ensure_ascii=False, indent=2)


# ---------------------------------------------------------------------------------------------------
# Prompts

def long_prompt():
    shots = []
    for i in range(12):
        shots.append(
            "Shot %d (%.1f-%.1f s): The camera slowly pans across a sunlit kitchen; a woman in a red jacket "
            "laughs while the man pours coffee. <d>Speaker %d: \"Don't worry, we'll be fine — it's only %d "
            "minutes!\"</d> Ambient audio: rain on the window, soft piano. 镜头缓慢推进，霓虹灯倒映在水坑里。 🎬🎵\n"
            % (i + 1, 2.5 * i, 2.5 * i + 2.5, i % 3, 10 + 7 * i))
    text = "".join(shots)
    assert len(text) > 2000
    return text


def prompts():
    p = [
        ("en_simple", "A woman walks along a beach at sunset."),
        ("en_sentence", "The quick brown fox jumps over the lazy dog, twice!"),
        ("en_capitals", "NASA's CEO said: HELLO World, GoodBye."),
        ("contractions", "don't can't won't it's we're I'll you've I'm she'd they'd"),
        ("contractions_upper", "DON'T IT'S WE'RE I'LL YOU'VE I'M SHE'D 'S 'T 'RE 'VE 'M 'LL 'D"),
        ("contractions_edge", "'sam 'tis 'llama 'rex 'dx ''s 's' x's 'ſam 'ſ x'ſam it'Ll we'RE o'ﬆ"),
        ("digits", "0123456789 12 345 6789 1000000 3.14159 -42 +7 1e-9"),
        ("digits_mixed", "abc123def 4x4 v2.0.1 10:30pm 2026-08-24 1,234,567.89"),
        ("numerals_unicode", "٣٤٥ ४२ Ⅻ ½ ² ③ 一二三 ⅰx"),
        ("whitespace_runs", "a  b   c    d     e      f"),
        ("whitespace_lead_trail", "   leading and trailing   "),
        ("only_spaces", "       "),
        ("newlines", "line one\nline two\n\nline four\n\n\n"),
        ("crlf", "windows\r\nline\r\n\r\nend\r"),
        ("tabs_newlines", "\tindented\n\t\tdouble\n \t \n\t x\t\ty \n \n  z"),
        ("space_before_newline", "word   \n   next  \n\n  last"),
        ("unicode_spaces", "a\u00a0b\u2003c\u3000d\u2028e\u2029f\u0085g\u180eh\u200bi\u202fj\u205fk\u1680l"),
        ("control_chars", "x\x1cy\x1dz\x1e w\x1f\x0b\x0cv"),
        ("zh", "一个女人在阳光明媚的厨房里笑着，男人倒咖啡。"),
        ("zh_mixed", "镜头推进：Camera pushes in, 霓虹灯 neon lights 2026年8月24日。"),
        ("zh_punct", "他说：“我们走吧！”她回答：‘好的’……（完）"),
        ("ja", "カメラがゆっくりと台所を横切る。「行こう！」と彼は言った。"),
        ("ja_mixed", "東京タワー🗼は333mです。ｶﾀｶﾅ半角とＡＢＣ全角。"),
        ("ko", "안녕하세요, 세계! 카메라가 천천히 움직입니다."),
        ("ar_he", "مرحبا بالعالم ١٢٣ שלום עולם"),
        ("hi", "नमस्ते दुनिया, कैमरा धीरे-धीरे चलता है।"),
        ("th", "สวัสดีชาวโลก กล้องเคลื่อนที่ช้าๆ"),
        ("ru_el", "Привет, мир! Καλημέρα κόσμε."),
        ("emoji_simple", "I love this 😀😂🎬 so much!"),
        ("emoji_zwj", "family 👨‍👩‍👧‍👦 coder 👩‍💻 flag 🏳️‍🌈 rainbow"),
        ("emoji_skin", "👍🏽👍🏻👍🏿 🙏🏻 wave👋🏾!"),
        ("emoji_flags_keycaps", "🇯🇵🇺🇸🇫🇷 1️⃣ #️⃣ ©️ ™"),
        ("emoji_only", "🔥✨🎉🤖🐶🌊☕❤️"),
        ("nfc_combining_e", "Cafe\u0301 cre\u0300me bru\u0302le\u0301e"),
        ("nfc_precomposed", "Café crème brûlée naïve"),
        ("nfc_reorder", "e\u0323\u0302 e\u0302\u0323 a\u0328\u0301 o\u031b\u0300\u0323"),
        ("nfc_singletons", "\u212b \u2126 \u212a \u1fef \u0340\u0341"),
        ("nfc_exclusions", "\u0958 \u0915\u093c \u2adc \u0344 \U0001d15e"),
        ("nfc_hangul_jamo", "\u1100\u1161\u11a8 \uac00\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af"),
        ("nfc_lone_marks", "\u0301start \u0308\u0308 x\u20dd \u0300"),
        ("nfc_vietnamese", "Tie\u0302\u0301ng Vie\u0323\u0302t co\u0301 da\u0302\u0301u"),
        ("special_tokens", "<|im_start|>user\nDescribe the video.<|im_end|>\n<|im_start|>assistant\n"),
        ("vision_block", "<Picture 1>: <|vision_start|><|image_pad|><|image_pad|><|image_pad|><|vision_end|>"
                         "A cat sleeps."),
        ("video_block", "<Video 1>: <1.0 seconds><|vision_start|><|video_pad|><|video_pad|><|vision_end|>"),
        ("endoftext", "end<|endoftext|>start<|endoftext|><|endoftext|>"),
        ("dialogue", "<d>Hello there!</d> she says. <d>我们走吧</d>"),
        ("dialogue_nested_spaces", "  <d>  spaced  </d>  \n<d></d><d>x</d>"),
        ("tool_call", "<tool_call>{\"name\": \"f\"}</tool_call> and <tool_call >"),
        ("near_special", "<|im_start <|im_end| <| |> <|vision_start|x <|unknown|> <d </d ><D>"),
        ("punct_invalid_looking", "!!!???... ;;; --- ___ *** ~~~ ``` ''' \"\"\" <<<>>> ((([[[{{{"),
        ("punct_unicode", "«quotes» „low“ ‘single’ — – … • · ¿¡ ‽ ※ §¶ †‡"),
        ("math_symbols", "∑∫√∞≈≠≤≥ ±×÷ ∀x∈ℝ: x²≥0 → ⊤"),
        ("code_python", "def f(x):\n    return x * 2  # double\n\nprint(f(21))\n"),
        ("code_cpp", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n"),
        ("code_json", "{\"key\": [1, 2.5, -3e10], \"nested\": {\"ok\": true, \"s\": \"a\\nb\"}}"),
        ("url_email", "Visit https://example.com/path?q=1&x=%20y#frag or mail me@example.org."),
        ("astral_letters", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝 𠀋𠀍 𝟘𝟙𝟚"),
        ("private_use_nonchars", "\ue000\uf8ff \ufffd \uffff \U0010ffff \U000e0041"),
        ("nul_and_del", "a\x00b\x7fc\x01"),
        ("bom_zwsp", "\ufeffstart\u200bmid\u200cjoin\u200dend"),
        ("single_char", "x"),
        ("single_space", " "),
        ("single_newline", "\n"),
        ("empty", ""),
        ("apostrophes_unicode", "don’t it’s ’s ʼs 's"),
        ("repeated_words", "go go go go go go go go go go gogogogogogogogo"),
        ("long_word", "Supercalifragilisticexpialidocious antidisestablishmentarianism"),
        ("repeated_char", "a" * 300 + " " + "=" * 100 + "\n" * 5),
        ("long_prompt", long_prompt()),
    ] + random_unicode_prompts(random.Random(SEED + 1), 8, 400)
    names = [n for n, _ in p]
    assert len(names) == len(set(names)), "duplicate prompt names"
    return p


def random_unicode_prompts(rng, count, length):
    """Random assigned characters from all planes, mixed with spaces, digits and marks: exercises the
    \\p{L} / \\p{N} / \\s tables and NFC far beyond the hand-written prompts."""
    pool = [cp for cp in range(0x110000)
            if not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) not in ("Cn", "Co", "Cs")]
    common = " \t\n\r0123456789'sStT\u0301\u0308\u00a0\u3000"
    out = []
    for i in range(count):
        chars = [rng.choice(common) if rng.random() < 0.3 else chr(rng.choice(pool)) for _ in range(length)]
        out.append(("random_unicode_%d" % i, "".join(chars)))
    return out


def variant_prompts():
    return [
        ("digits_grouped", "1 12 123 1234 12345 123456 1234567 ٣٤٥٦ 3.14159265"),
        ("lstrip", "before   <sep>after x<sep> y \t<sep>"),
        ("rstrip", "x<pad_r>   y <pad_r>\n\nz<pad_r>"),
        ("both_strips", "a  <both>  b<both><both> c"),
        ("overlapping_strips", "<pad_r>  <sep> <both>  <sep>"),
        ("normalized_content", "<cafe\u0301> and <café> and <cafe>"),
        ("specials_still_work", "<|im_start|>hi<|im_end|> <d>ok</d>"),
        ("plain_text", "The camera pans 2026 times 😀 镜头"),
    ]


def nfc_cases():
    """NFD -> NFC round trips for every canonical decomposition, plus hand-picked reorderings."""
    cases = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            nfd = unicodedata.normalize("NFD", chr(cp))
            cases.append([nfd, unicodedata.normalize("NFC", nfd)])
            cases.append([chr(cp), unicodedata.normalize("NFC", chr(cp))])
    rng = random.Random(SEED)
    marks = [0x300, 0x301, 0x302, 0x308, 0x323, 0x328, 0x31B, 0x345, 0x5B0, 0x93C, 0x20DD, 0x1AB0]
    bases = ["a", "e", "o", "u", "A", "\u03b1", "\u03c9", "\u0915", "\u1100", "\uac00", " ", "\u05d0"]
    for _ in range(300):
        s = "".join(rng.choice(bases) + "".join(chr(rng.choice(marks)) for _ in range(rng.randint(0, 3)))
                    for _ in range(rng.randint(1, 4)))
        cases.append([s, unicodedata.normalize("NFC", s)])
    for _ in range(200):  # Hangul jamo sequences: L V T compose algorithmically
        s = "".join(chr(rng.choice([0x1100 + rng.randint(0, 18), 0x1161 + rng.randint(0, 20),
                                    0x11A7 + rng.randint(0, 27), 0xAC00 + 28 * rng.randint(0, 398)]))
                    for _ in range(rng.randint(1, 5)))
        cases.append([s, unicodedata.normalize("NFC", s)])
    return cases


def encode_all(tok, items, pattern):
    """ids, plus the normalized text, its regex words (no added-token matching) and the decoded ids."""
    split = pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False)
    out = []
    for name, text in items:
        ids = tok.encode(text, add_special_tokens=False).ids
        normalized = tok.normalizer.normalize_str(text)
        out.append(dict(name=name, prompt=text, ids=ids, normalized=normalized,
                        words=[w for w, _ in split.pre_tokenize_str(normalized)],
                        decoded=tok.decode(ids, skip_special_tokens=False)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out)
    (out / "qwen_bpe").mkdir(parents=True, exist_ok=True)
    (out / "variant_bpe").mkdir(parents=True, exist_ok=True)

    rng = random.Random(SEED)
    trained = json.loads(build_tokenizer(make_corpus(rng)).to_str())
    # The Python decoder constructor takes no options; Qwen's file spells them all out as false.
    trained["decoder"] = dict(type="ByteLevel", add_prefix_space=False, trim_offsets=False, use_regex=False)
    main_json = json.dumps(trained, ensure_ascii=False, indent=2)
    tok = Tokenizer.from_str(main_json)  # the goldens come from the file as saved
    (out / "qwen_bpe" / "tokenizer.json").write_text(main_json + "\n", encoding="utf-8")
    variant_json = make_variant(main_json)
    (out / "variant_bpe" / "tokenizer.json").write_text(variant_json + "\n", encoding="utf-8")
    variant = Tokenizer.from_str(variant_json)
    for t in json.loads(variant_json)["added_tokens"]:  # the file's ids are the ones the reference uses
        assert variant.token_to_id(t["content"]) == t["id"], t

    cases = encode_all(tok, prompts(), QWEN_PATTERN)
    for c in cases:  # the main tokenizer round-trips every prompt to its NFC form
        assert c["decoded"] == c["normalized"] == unicodedata.normalize("NFC", c["prompt"]), c["name"]
    golden = dict(
        generator="scripts/golden/make_tokenizer_golden.py",
        tokenizers_version=tokenizers.__version__,
        unicode_version=unicodedata.unidata_version,
        vocab_size=tok.get_vocab_size(with_added_tokens=True),
        model_vocab_size=tok.get_vocab_size(with_added_tokens=False),
        token_ids={t: tok.token_to_id(t) for t in QWEN_SPECIALS + ["<d>", "</d>", "Ġthe", "the"]},
        cases=cases,
        variant_vocab_size=variant.get_vocab_size(with_added_tokens=True),
        variant_cases=encode_all(variant, variant_prompts(), LLAMA3_PATTERN),
    )
    (out / "golden.json").write_text(json.dumps(golden, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    nfc = nfc_cases()
    (out / "nfc_cases.json").write_text(json.dumps(dict(unicode_version=unicodedata.unidata_version,
                                                        cases=nfc), ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    print("vocab %d (model %d), %d prompts, %d variant prompts, %d NFC cases"
          % (golden["vocab_size"], golden["model_vocab_size"], len(cases), len(golden["variant_cases"]),
             len(nfc)))


if __name__ == "__main__":
    main()
