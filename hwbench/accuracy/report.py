"""The audit report models (defined with the plugin contract in :mod:`hwbench.core.audit_report`,
re-exported here where they have always been imported from)."""

from __future__ import annotations

from hwbench.core.audit_report import AuditReport, CandidateVerdict, ProtocolReport, Role, RunSummary

__all__ = ["AuditReport", "CandidateVerdict", "ProtocolReport", "Role", "RunSummary"]
