"""The normalisation shared by model training and inference."""

from __future__ import annotations

import pytest

from datapipe.errors import SpecError
from stages.models.textnorm import RESERVED_TOKENS, TextNorm


def test_default_normalisation():
    norm = TextNorm()
    text = "  The “Quick”  brown fox—jumped   over 42\u00a0dogs…\r\n\n\nIt's 3:15 p.m.\tnow. "
    assert norm.lines(text) == [
        'the " quick " brown fox - jumped over 00 dogs . . .',
        "it ' s 0 : 00 p . m . now .",
    ]
    assert norm.one_line(text) == " ".join(norm.lines(text))
    assert norm(text) == "\n".join(norm.lines(text))


def test_switches():
    text = "Café 1999, naïve!"
    assert TextNorm(lowercase=False).one_line(text) == "Café 0000 , naïve !"
    assert TextNorm(digits=False).one_line(text) == "café 1999 , naïve !"
    assert TextNorm(strip_accents=True).one_line(text) == "cafe 0000 , naive !"
    assert TextNorm(split_punct=False).one_line(text) == "café 0000, naïve!"
    assert TextNorm(max_chars=4).one_line(text) == "café"


def test_non_latin_words_survive():
    assert TextNorm().one_line("Цитаты знаменитого Марка Твена. 馬克·吐溫名言") == \
        "цитаты знаменитого марка твена . 馬克 . 吐溫名言"


def test_reserved_arpa_tokens_cannot_be_produced():
    out = TextNorm().one_line("a <s> b </s> c <unk> d")
    assert not set(out.split()) & set(RESERVED_TOKENS)


def test_empty_and_none():
    norm = TextNorm()
    assert norm.lines(None) == [] and norm.lines("") == [] and norm.lines(" \n\t\n") == []
    assert norm.one_line(None) == ""


def test_card_round_trip_and_unknown_keys():
    norm = TextNorm(lowercase=False, strip_accents=True, max_chars=100)
    assert TextNorm.from_dict(norm.to_dict()) == norm
    assert TextNorm.from_dict(None) == TextNorm()
    with pytest.raises(SpecError, match="unknown settings"):
        TextNorm.from_dict({"lowercase": True, "stem": True})
    with pytest.raises(SpecError, match="max_chars"):
        TextNorm(max_chars=-1)
