"""Change-feed cursors round-trip and refuse anything that is not one."""

from __future__ import annotations

import pytest

from findata.change_cursor import decode_change_cursor, encode_change_cursor


@pytest.mark.parametrize("record_id", [0, 1, 123_456, 999_999_999_999])
def test_round_trip(record_id: int) -> None:
    assert decode_change_cursor(encode_change_cursor(record_id)) == record_id


@pytest.mark.parametrize(
    "text", ["", "chg_1", "chg_00000000000x", "2026-01-01", " chg_000000000001"]
)
def test_not_a_cursor(text: str) -> None:
    assert decode_change_cursor(text) is None


def test_negative_ids_are_refused() -> None:
    with pytest.raises(ValueError):
        encode_change_cursor(-1)
