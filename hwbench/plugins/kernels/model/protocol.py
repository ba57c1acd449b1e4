"""Plugin ``builtin-model-protocol``: registers the ``onnx-model`` audit protocol, cheaply (the
protocol, :mod:`.audit_protocol`, and the evaluator are imported when an audit first uses it)."""

from __future__ import annotations

from hwbench.core.audit_protocol import AuditProtocol, LazyProtocol
from hwbench.core.hookspecs import hookimpl
from hwbench.plugins.kernels.model.kernel import PROTOCOL, model_protocol_refusal

HWBENCH_CONTRACT = 3


def _load() -> AuditProtocol:
    from hwbench.plugins.kernels.model.audit_protocol import ModelProtocol

    return ModelProtocol()


@hookimpl
def hwbench_audit_protocols() -> list[AuditProtocol]:
    return [LazyProtocol(PROTOCOL, model_protocol_refusal, _load)]
