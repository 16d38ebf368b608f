# ruff: noqa: RUF001
"""A generated corpus of documents mixing scripts, accents, punctuation, numbers,
emoji, CJK, ligatures, very long words and odd whitespace."""

from __future__ import annotations

import random

_PIECES = (
    "The quick brown fox jumps over the lazy dog", "running runners ran", "I'm sure they'll",
    "Café naïve résumé façade", "Straße ẞ groß", "ﬁnancial ﬂow Æsir œuvre",
    "İstanbul ΣΊΣΥΦΟΣ Σίσυφος",
    "Москва и Петербург", "東京タワーは日本の首都にあります", "中文分词测试",
    "한국어 텍스트", "😀🎉 emoji 👍🏽",
    "3.14159 v2.0.1 1,000,000", "½ ⅓ ¼ Ⅷ ² ① ⑴", "e-mail foo_bar HTTPServer", "don't rock’n’roll",
    "हिन्दी देवनागरी", "العربية في", "עברית", "Ελληνικά και του", "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ",
    "DŽ ǅ ǆ þorn ıi", "tab\there\nnewline\x0bvt\x0cff\rcr", "\u00a0nbsp\u2003em\u3000ideo",
    "a" * 45, "é" * 25, "supercalifragilisticexpialidocious", "ok", "", " ", "!!!", "x.y",
    "les enfants de la ville", "und die Kinder", "los niños y las niñas", "the and of it's",
    "ꟊ\u1c89 new-letters \U00010d50", "Ǯ ǯ ʱ µ ŉ Ŀ", "«quoted» ‘single’ “double”", "A1B2C3",
    "nul\x00byte",
)  # fmt: skip


def documents(count: int, seed: int = 7) -> list[str | None]:
    rng = random.Random(seed)
    out: list[str | None] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.02:
            out.append(None)
            continue
        parts = rng.choices(_PIECES, k=rng.randint(1, 4))
        if roll < 0.1:
            parts.append("".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 12))))
        out.append(rng.choice([" ", "  ", "\t", ", "]).join(parts))
    return out
