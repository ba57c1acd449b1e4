"""A model or function audit's pages: the error growing along the graph, per candidate.

One plot per candidate: node index (graph order) against log10 of each node's error in ulps of the
device's storage format, the fp32 ensemble floor's beside it, the first node above its floor marked;
then the table of the nodes (name, op, errors, floor, mechanism).
"""

from __future__ import annotations

import math
from typing import Any

from hwbench.report import charts

ZERO_ULPS = 1e-2
"""Where an exact node (0 ulps) is drawn on the log scale: below every rounding error."""
TABLE_ROWS = 400


def _log_ulps(value: Any) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return math.nan
    return math.log10(max(float(value), ZERO_ULPS))


def node_sections(protocol: dict[str, Any], esc: Any, table: Any, image: Any) -> str:
    """Every candidate's plot and node table (``esc``, ``table``, ``image``: the page's helpers)."""
    out = []
    for c in protocol.get("candidates") or []:
        nodes = c.get("nodes") or []
        label = f"{c.get('device')}:{c.get('mode')}"
        first = c.get("first_divergent_node")
        index = next((i for i, n in enumerate(nodes) if n.get("name") == first), None)
        xs = list(range(len(nodes)))
        series = [charts.Series(f"{label} ({c.get('verdict')})", xs, [_log_ulps(n.get("max_ulps")) for n in nodes])]
        if any(n.get("floor_ulps") is not None for n in nodes):
            series.append(charts.Series("fp32 ensemble floor", xs, [_log_ulps(n.get("floor_ulps")) for n in nodes]))
        uri = charts.line_chart(
            series, title=f"{label}: error along the graph", xlabel="node (graph order)",
            ylabel=f"log10 ulps of {c.get('ulp_format') or 'its format'}", logy=False, vline=index,
        )  # fmt: skip
        where = f"first node above its floor: #{index} {first}" if first else "no node above its floor"
        mech = f" ({c.get('mechanism')})" if c.get("mechanism") else ""
        body = f"<h3>Node by node: {esc(label)}</h3><p>{esc(where + mech)}; engine {esc(c.get('engine'))}</p>"
        body += image(uri, f"{label} error along the graph")
        keys = ("name", "op_type", "max_rel_error", "max_ulps", "floor_ulps")
        rows = [(i, *(n.get(k) for k in keys), "yes" if n.get("above_floor") else "", n.get("mechanism") or "")
                for i, n in enumerate(nodes)]  # fmt: skip
        headers = ["#", "node", "op", "max rel", "ulps", "floor ulps", "above floor", "mechanism"]
        body += table(headers, rows[:TABLE_ROWS])
        out.append(body)
    return "".join(out)
