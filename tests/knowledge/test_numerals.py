"""The figure reader: number words count only as whole words."""

from __future__ import annotations

from knowledge.numerals import Quantity, quantities


def test_number_words_inside_other_words_are_not_figures() -> None:
    assert quantities("a handwritten note is often added by someone") == []


def test_number_words_and_digits_are_read_with_their_unit() -> None:
    assert quantities("ten days, or 2-3 weeks for one parcel") == [
        Quantity(10.0, "day"),
        Quantity(2.0, "week"),
        Quantity(3.0, "week"),
        Quantity(1.0, ""),
    ]


def test_chinese_numerals_are_read() -> None:
    assert quantities("三十六个月") == [Quantity(36.0, "month")]
