"""Where the store lives: ``--store URL`` > ``HWBENCH_STORE`` > the user's data directory.

Kept apart from the database code so that resolving (and refusing) a location costs no SQLAlchemy import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hwbench.core.errors import UsageError

ENV_VAR = "HWBENCH_STORE"
NO_STORE = "none"
"""``HWBENCH_STORE=none`` (or ``--no-store``) turns recording off."""

MAX_LIMIT = 1_000_000_000
"""The largest ``--limit`` of a listing (0 lists all): past it the number is a typo, and past 2^63
it would not reach the database (kept here, free of SQLAlchemy, for the CLI's option types)."""

_SCHEMES = ("sqlite", "postgresql")


@dataclass(frozen=True)
class StoreLocation:
    """A resolved store: the SQLAlchemy URL and whether it came from the user or the default."""

    url: str
    explicit: bool

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite")

    def describe(self) -> str:
        """The URL with any password hidden, for messages."""
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)


def default_path() -> Path:
    """``$XDG_DATA_HOME/hwbench/results.sqlite`` (``~/.local/share/hwbench/results.sqlite`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hwbench" / "results.sqlite"


def normalise(text: str) -> str:
    """Accept a SQLAlchemy URL or a plain file path; pick the psycopg 3 driver for PostgreSQL."""
    text = text.strip()
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    scheme, _, rest = text.partition("://")
    base = scheme.split("+", 1)[0]
    if base == "postgres":
        base = "postgresql"
    if base not in _SCHEMES:
        raise UsageError(
            f"store URL scheme '{scheme}' is not supported: use sqlite:///PATH, postgresql://..., or a file path"
        )
    if base == "postgresql" and "+" not in scheme:
        scheme = "postgresql+psycopg"
    return f"{scheme}://{rest}"


def resolve_location(option: str | None = None, *, disabled: bool = False) -> StoreLocation | None:
    """The store to use, or None when recording is off (``--no-store`` or ``HWBENCH_STORE=none``)."""
    if disabled:
        return None
    if option is not None:
        if not option.strip():
            raise UsageError("--store must not be empty: give a store URL, a file path, or 'none' (record nothing)")
        return None if option.strip().lower() == NO_STORE else StoreLocation(normalise(option), explicit=True)
    env = os.environ.get(ENV_VAR, "")
    if env.strip().lower() in (NO_STORE, "off", "0"):
        return None
    if env.strip():
        return StoreLocation(normalise(env), explicit=True)
    return StoreLocation(f"sqlite:///{default_path()}", explicit=False)
