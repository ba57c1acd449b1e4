"""``hwbench.open_store``: the results store from Python, with the history as a pandas DataFrame."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hwbench.core.errors import UnavailableError, UsageError

if TYPE_CHECKING:
    from hwbench.store.db import Store
    from hwbench.store.models import StoredResult

_FILTERS = ("kind", "kernel", "device", "mode", "tag", "since", "until", "limit")


class ResultsStore:
    """A results store opened from Python: ``list``/``get`` as ``hwbench results`` has them, and
    ``to_pandas`` for the history (one row per stored result, newest first)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def url(self) -> str:
        """Where the store is (password hidden)."""
        return self.store.location.describe()

    def list(self, **filters: Any) -> list[StoredResult]:
        """Stored results matching ``kind``, ``kernel``, ``device``, ``mode``, ``tag``, ``since``,
        ``until`` (ISO dates) and ``limit`` (default 50; 0 or None: all), newest first."""
        return self.store.list(_filters(filters))

    def get(self, ref: int | str) -> StoredResult:
        """One stored result with its document and environment, by id or uid."""
        return self.store.get(ref)

    def to_pandas(self, **filters: Any) -> Any:
        """The matching results as a ``pandas.DataFrame`` (filters as :meth:`list`; ``limit`` defaults to all).

        Columns: id, uid, kind, created (UTC timestamps), kernel, device, mode, engine, dtype, size,
        verdict, run_s (the minimum run time), tags (a list). Raises :class:`UnavailableError` when
        pandas is not installed (``pip install 'hwbench[pandas]'``).
        """
        try:
            import pandas  # type: ignore[import-untyped,unused-ignore]  # stubs optional
        except ModuleNotFoundError:
            raise UnavailableError("to_pandas needs pandas: pip install 'hwbench[pandas]' (or pandas)") from None
        filters.setdefault("limit", None)
        rows = [r.model_dump(exclude={"environment", "document"}) for r in self.list(**filters)]
        columns = [name for name in _columns() if name not in ("environment", "document")]
        frame = pandas.DataFrame(rows, columns=columns)
        frame["created"] = pandas.to_datetime(frame["created"], utc=True)
        return frame

    def _repr_html_(self) -> str:
        return str(self.to_pandas(limit=20)._repr_html_())


def _columns() -> list[str]:
    from hwbench.store.models import StoredResult

    return list(StoredResult.model_fields)


def _filters(given: dict[str, Any]) -> Any:
    import datetime as _dt

    from hwbench.store.db import Filters

    unknown = sorted(set(given) - set(_FILTERS))
    if unknown:
        raise UsageError(f"unknown filter {', '.join(unknown)}: filter by {', '.join(_FILTERS)}")
    for name in ("since", "until"):
        if given.get(name):
            try:
                _dt.datetime.fromisoformat(str(given[name]))
            except ValueError:
                raise UsageError(f"{name} expects an ISO date like 2026-01-31, got '{given[name]}'") from None
    limit = given.get("limit", 50)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise UsageError("limit must be an integer >= 0 (0 or None: all)")
    values = {k: None if given.get(k) is None else str(given[k]) for k in _FILTERS if k != "limit"}
    return Filters(**values, limit=limit or None)


def open_store(url: str | None = None) -> ResultsStore:
    """The store at ``url`` (``sqlite:///PATH``, ``postgresql://...`` or a file path), else the one
    ``$HWBENCH_STORE`` names, else the user's data directory's; as ``--store`` resolves it."""
    from hwbench.store.db import Store
    from hwbench.store.location import resolve_location

    location = resolve_location(url)
    if location is None:
        raise UsageError("the results store is off (HWBENCH_STORE=none): give open_store a URL")
    return ResultsStore(Store(location))


def record(result: Any, url: str | None = None, tags: Sequence[str] = ()) -> int:
    """Record a result model (run, bench, audit, ...) in the store at ``url`` (default as above); its id."""
    from hwbench.library.recording import _document, environment_for
    from hwbench.store.environment import capture

    store = open_store(url).store
    document = _document(result)
    return store.record(document, environment_for(capture(), document), tuple(tags))


def record_if(store: str | bool, result: Any, tags: Sequence[str] = ()) -> int | None:
    """A library call's ``store=`` argument: False records nothing, True the default store, a URL that one
    (in a multi-process run, process 0 alone records)."""
    from hwbench.core.distributed import is_leader

    if store is False or not is_leader():
        return None
    return record(result, None if store is True else store, tags)
