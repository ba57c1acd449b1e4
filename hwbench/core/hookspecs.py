"""Hook specifications of hwbench (pluggy project name ``hwbench``).

Plugins — the built-in ones and those installed with pip under the entry-point group
``hwbench`` — implement any subset of these with ``@hwbench.api.hookimpl`` (the same marker as
``hwbench.core.hookspecs.hookimpl``), as module-level functions named exactly as the hook.
Registration hooks return lists of typed objects; the host calls each plugin's
implementation on its own, so one plugin that raises is reported as failed and the others
still register.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

PROJECT = "hwbench"
ENTRY_POINT_GROUP = "hwbench"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

if TYPE_CHECKING:
    from hwbench.core.audit_protocol import AuditProtocol
    from hwbench.core.device import Device
    from hwbench.core.engine import Engine
    from hwbench.core.kernel import Kernel
    from hwbench.core.metric import Metric


@hookspec
def hwbench_devices() -> list[Device]:  # type: ignore[empty-body]  # a spec: pluggy never runs its body
    """Return the devices this plugin provides.

    :returns: a list of :class:`hwbench.api.Device`, each with a unique ``spec.name``.

    Called once per plugin when the registry loads, on every hwbench start. Construction must be
    cheap and import no SDK: availability is decided later by ``Device.probe()``. The host reads
    each device's ``executor`` signature: ``executor(self, request)`` is plugin contract 2;
    a contract-1 ``executor(self, kernel, workload, ...)`` is served through an adapter.

    Example::

        @hwbench.api.hookimpl
        def hwbench_devices():
            return [AcmeNpu()]

    .. versionchanged:: contract 2  ``Device.executor`` takes one ``RunRequest``.
    """


@hookspec
def hwbench_kernels() -> list[Kernel]:  # type: ignore[empty-body]  # a spec: pluggy never runs its body
    """Return the kernels this plugin provides.

    :returns: a list of :class:`hwbench.api.Kernel`, each with a unique ``info.name``, written
        against the ops interface (``hwbench.api.OPS_FUNCTIONS``) so every engine and every numerics
        emulation can run it.

    Called once per plugin when the registry loads. Example::

        @hwbench.api.hookimpl
        def hwbench_kernels():
            return [MyKernel()]
    """


@hookspec
def hwbench_metrics() -> list[Metric]:  # type: ignore[empty-body]  # a spec: pluggy never runs its body
    """Return the metrics this plugin provides.

    :returns: a list of :class:`hwbench.api.Metric`, each with a unique ``info.name``.

    ``info.kind`` decides when a metric runs and what ``compute(**data)`` receives (the module
    docstring of :mod:`hwbench.core.metric` lists it): ``accuracy`` / ``check`` in the audit;
    ``performance``, ``static``, ``workload`` and ``energy`` on every ``run`` and ``bench``
    configuration whose kernel reports what ``info.requires`` names. Called once per plugin when
    the registry loads. Example::

        @hwbench.api.hookimpl
        def hwbench_metrics():
            return [MaxRelativeDeviation()]
    """


@hookspec
def hwbench_engines() -> list[Engine]:  # type: ignore[empty-body]  # a spec: pluggy never runs its body
    """Return the execution engines this plugin provides.

    :returns: a list of :class:`hwbench.api.Engine`, each with a unique ``name``. ``available()``
        must be cheap; import the backing library inside ``build()``.

    Called once per plugin when the registry loads. Example::

        @hwbench.api.hookimpl
        def hwbench_engines():
            return [AcmeSimEngine()]
    """


@hookspec
def hwbench_audit_protocols() -> list[AuditProtocol]:  # type: ignore[empty-body]  # a spec: pluggy never runs its body
    """Return the audit protocols this plugin provides (plugin contract 3).

    :returns: a list of :class:`hwbench.api.AuditProtocol`, each with a unique ``info.name`` (the
        ``--protocol`` name). ``refusal(kernel)`` says whether it applies to a kernel; ``run(ctx)``
        runs and judges the candidates and returns :class:`hwbench.api.ProtocolReport` records.

    Called once per plugin when the registry loads. ``hwbench audit --kernel K`` runs every
    registered protocol that applies to K (or those named with ``--protocol``). Example::

        @hwbench.api.hookimpl
        def hwbench_audit_protocols():
            return [OutputRangeProtocol()]

    .. versionadded:: contract 3
    """


@hookspec
def hwbench_add_commands(cli: Any) -> None:
    """Add sub-commands to the ``hwbench`` command group.

    :param cli: the :class:`click.Group` of the ``hwbench`` command.

    Called once, plugin by plugin, when the CLI builds its command list; a plugin that raises
    here is reported as failed and the others still add theirs. Example::

        @hwbench.api.hookimpl
        def hwbench_add_commands(cli):
            @cli.command()
            def acme_info():
                click.echo("Acme NPU-1 plugin")
    """
