"""core/secrets.py: keys, and pieces of keys, are masked (docs/options.md, "Keys")."""

from __future__ import annotations

import pytest

from pytest_groundeval.core.secrets import MASK, Scrubber

KEY = "sk-9f3c1e7a20b84d6e5c"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Bearer {KEY}", f"Bearer {MASK}"),
        # Cut by an excerpt or a quote: the piece that is left is still the key's.
        ("A" * 12 + KEY[:14] + "…", "A" * 12 + MASK + "…"),
        (KEY[6:] + " tail", MASK + " tail"),
        (f"{KEY} and again {KEY[2:11]}", f"{MASK} and again {MASK}"),
        # Fewer than 8 characters of it are not a piece (and nothing else is touched).
        (f"x{KEY[:7]}x", f"x{KEY[:7]}x"),
        ("no key here", "no key here"),
    ],
)
def test_keys_and_their_pieces_are_masked(text, expected):
    assert Scrubber([KEY]).text(text) == expected


def test_short_keys_are_not_masked_and_values_are_walked():
    assert not Scrubber(["short", None])
    scrubbed = Scrubber([KEY]).value({"error": f"HTTP 401 {KEY[:-3]}", "n": 3, "list": [KEY, "ok"]})
    assert scrubbed == {"error": f"HTTP 401 {MASK}", "n": 3, "list": [MASK, "ok"]}
