"""What ``hwbench report`` reads, checked before the page is built: the target, and the documents.

A result file, or a stored result that was imported, is the user's data: a document edited into
another shape (a ``provenance`` that is a number, an environment profile whose ``ops`` is one) would
break the page's code (an AttributeError, exit 3). A result of a kind hwbench writes is validated
against that kind's model, and each recorded numerics profile against the profile model, so such a
document is one usage error naming the field; documents of other kinds are shown as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hwbench.core.errors import UsageError

_ALLOWED = "give a stored result id (hwbench results list), a result .json file, or 'history'"


def stored_ref(target: str) -> bool:
    """A result id (digits) or uid (32 characters), not a path that happens to be as long as one."""
    if "/" in target or target.endswith(".json"):
        return False
    return target.isdigit() or len(target) == 32


def not_a_file(path: Path) -> UsageError:
    """TARGET is neither 'history', an existing file nor a result id: what is wrong with it as a path, first."""
    if path.is_dir():
        return UsageError(f"{path} is a folder, not a result file; {_ALLOWED}")
    if path.exists():
        return UsageError(f"{path} is not a regular file; {_ALLOWED}")
    return UsageError(f"{path}: no such file, and not a stored result id; {_ALLOWED}")


def _first_error(exc: Any) -> str:
    first = exc.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc']) or 'the top level'}: {first['msg']}"


def check_result(doc: dict[str, Any], kind: str, origin: str) -> None:
    """A document of a kind hwbench writes has that kind's shape, or a UsageError names the field."""
    from pydantic import BaseModel, ValidationError

    from hwbench.accuracy.report import AuditReport
    from hwbench.core.results import SCHEMAS
    from hwbench.plugins.kernels.snn.results import TrainBenchResult, TrainResult
    from hwbench.stress.sensitivity import SweepResult

    models: dict[str, type[BaseModel]] = {**SCHEMAS, "audit": AuditReport, "sweep": SweepResult}
    models |= {"train": TrainResult, "train-bench": TrainBenchResult}
    model = models.get(kind)
    if model is None:
        return
    try:
        model.model_validate(doc)
    except ValidationError as exc:
        raise UsageError(f"{origin} is not a well-formed hwbench {kind} result ({_first_error(exc)})") from None


def check_profiles(profiles: dict[str, Any], origin: str) -> None:
    """Each numerics profile a stored result's environment records is one, or a UsageError names it."""
    from pydantic import ValidationError

    from hwbench.accuracy.numerics.profile import NumericsProfile

    for key, profile in profiles.items():
        try:
            NumericsProfile.model_validate(profile)
        except ValidationError as exc:
            raise UsageError(f"{origin}: its environment's profile {key} is malformed ({_first_error(exc)})") from None
