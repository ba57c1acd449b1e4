"""The numbers a user's TOML or JSON file may hold: exactly the 64-bit signed integers (TOML's own
range, and what SQLite's and PostgreSQL's integer columns hold), refused one past either end."""

from __future__ import annotations

import pytest

from hwbench.core.errors import UsageError
from hwbench.core.user_data import parse_toml


@pytest.mark.parametrize("value", [-(2**63), 2**63 - 1, 0])
def test_every_64_bit_integer_is_held(value: int) -> None:
    assert parse_toml(f"x = {value}", "profile") == {"x": value}


@pytest.mark.parametrize("value", [-(2**63) - 1, 2**63])
def test_one_past_64_bits_is_refused_naming_the_range(value: int) -> None:
    with pytest.raises(
        UsageError, match=r"profile: x: the number .* is out of range; .*-9223372036854775808 to 9223372036854775807"
    ):
        parse_toml(f"x = {value}", "profile")
