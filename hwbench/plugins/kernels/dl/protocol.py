"""Plugin ``builtin-dl-protocol``: registers the DL primitives' audit protocol, cheaply (the
protocol, :mod:`.audit_protocol`, and what it needs are imported when an audit first uses it)."""

from __future__ import annotations

from hwbench.core.audit_protocol import AuditProtocol, LazyProtocol
from hwbench.core.hookspecs import hookimpl
from hwbench.plugins.kernels.dl.kernels import dl_protocol_refusal

HWBENCH_CONTRACT = 3


def _load() -> AuditProtocol:
    from hwbench.plugins.kernels.dl.audit_protocol import DLProtocol

    return DLProtocol()


@hookimpl
def hwbench_audit_protocols() -> list[AuditProtocol]:
    return [LazyProtocol("dl-primitives", dl_protocol_refusal, _load)]
