"""What a stored result is kept with: the document (bulk arrays left out), the devices used with the
hash of the numerics profile each ran under, and the seeds. The CLI's ``--store`` and the library's
``store=`` both record through here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


def _profile_hash(profile: Any) -> str:
    """sha256 of the profile's canonical JSON, 16 hex digits: equal hashes, equal arithmetic."""
    return hashlib.sha256(profile.to_json().encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _DeviceUse:
    device: str
    mode: str | None
    execution: str | None = None
    overrides: dict[str, Any] | None = None
    profile_file: str | None = None


def _device_uses(document: dict[str, Any]) -> list[_DeviceUse]:
    timings = [document["timing"]] if isinstance(document.get("timing"), dict) else document.get("timings") or []
    # a timing or candidate that names no device is left out
    uses = [
        _DeviceUse(t["device"], t.get("mode"), t.get("execution"))
        for t in timings
        if isinstance(t, dict) and t.get("device")
    ]
    for c in (document.get("settings") or {}).get("candidates", []):
        if c.get("device"):
            uses.append(_DeviceUse(c["device"], c.get("mode"), None, c.get("overrides"), c.get("profile_file")))
    unique: dict[str, _DeviceUse] = {}
    for u in uses:
        key = json.dumps([u.device, u.mode, u.execution, u.overrides, u.profile_file], sort_keys=True, default=str)
        unique.setdefault(key, u)
    return list(unique.values())


@dataclass
class DevicesUsed:
    devices: list[Any]  # DeviceEnvironment
    profiles: dict[str, dict[str, Any]]  # profile hash -> profile


def _devices(document: dict[str, Any]) -> DevicesUsed:
    """Each device used, with its mode and the hash of the numerics profile it ran under."""
    from hwbench.core.plugins import get_registry
    from hwbench.store.environment import DeviceEnvironment

    registry, devices, profiles = get_registry(), [], {}
    for use in _device_uses(document):
        profile = None
        try:
            if use.profile_file:
                from hwbench.accuracy.numerics.profile import NumericsProfile

                profile = NumericsProfile.load(use.profile_file)
            else:
                profile = registry.device(use.device).numerics(use.mode, use.overrides or None)
        except Exception:  # a profile we cannot rebuild is recorded as unknown, not fatal
            profile = None
        digest = None
        if profile is not None:
            digest = _profile_hash(profile)
            profiles[digest] = profile.model_dump(mode="json")
        devices.append(
            DeviceEnvironment(
                device=use.device,
                mode=use.mode,
                execution=use.execution,
                profile=None if profile is None else profile.name,
                profile_hash=digest,
            )
        )
    return DevicesUsed(devices, profiles)


def _seeds(document: dict[str, Any]) -> list[int]:
    seeds = [
        (document.get(part) or {}).get("seed") for part in ("workload", "protocol", "settings") if part in document
    ]
    return sorted({int(s) for s in seeds if isinstance(s, int)})


def _document(result: BaseModel) -> dict[str, Any]:
    """The result as JSON, without the bulky arrays the store leaves in the result file."""
    from hwbench.store.extract import BULK_FIELDS, kind_of

    field_info = type(result).model_fields.get("schema_")
    kind = kind_of({"schema": getattr(field_info, "default", "")})
    from hwbench.core.strict_json import jsonable

    document: dict[str, Any] = jsonable(result, exclude=set(BULK_FIELDS.get(kind, ())))  # non-finite: named
    return document


def environment_for(base: Any, document: dict[str, Any], profile: Any = None) -> Any:
    """``base`` (this process's environment) completed with the devices used, with the hash of their
    numerics profile, and the seeds. ``profile``: the profile the candidate really ran under when it
    was built in memory (a sweep cell), which the document names but cannot rebuild."""
    environment = base.model_copy()
    used = _devices(document)
    if profile is not None:
        digest = _profile_hash(profile)
        used.profiles[digest] = profile.model_dump(mode="json")
        for device in used.devices:
            if device.device == profile.device:
                device.profile, device.profile_hash = profile.name, digest
    environment.devices, environment.profiles = used.devices, used.profiles
    environment.seeds = _seeds(document)
    return environment
