"""Accuracy: how a candidate's numbers are judged against the CPU reference.

:mod:`.numerics` is the emulation of a chip's arithmetic (number formats, rounding, numerics
profiles, the emulating ops namespace). The rest of this room judges results: the audit engine
(:mod:`.audit`: one auditor, which runs the registered audit protocols), the time-stepped
protocol machinery (:mod:`.stepped`) and the spike-train protocol (:mod:`.spike_train`),
accuracy metrics (:mod:`.metrics`), the kernel's metrics of an audit run (:mod:`.run_metrics`),
hard checks on a kernel's state (:mod:`.checks`), the validation scenario (:mod:`.validation`),
verdict rules (:mod:`.verdict`) and the report schema (:mod:`.report`). Protocols that push
numerics (the spike stress test, dt refinement, forensics) live one room up, in
:mod:`hwbench.stress`, which registers the time-stepped protocols.
"""
