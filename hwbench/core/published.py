"""Speed figures a study published for a real chip, shown beside the times measured here.

An emulated device's times are this host's: hwbench emulates a chip's arithmetic, not its speed.
Where a study published the real chip's own figure for the same configuration, a device states it
(:attr:`hwbench.core.device.DeviceSpec.published_timing`) with its source, and every timing of a
matching configuration carries it (:attr:`hwbench.core.results.Timing.published`), so that tables
and reports can set it beside the host's time. Figures are quoted as published: the founding
study states ratios in its text (its absolute times are only plotted), so most are ratios to
another chip, with the unit saying which.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class PublishedTiming(BaseModel):
    """A speed figure a study measured on the real chip, for the configurations it applies to."""

    kernel: str
    connected: bool | None = Field(None, description="the network's connectivity; None: either")
    ncells: int | None = Field(None, description="the size; None: every size the statement covers")
    config: str | None = Field(None, description="a named configuration (DL primitives: gemm_k4, ...); None: any")
    workload: str = Field(description="what was measured, in the study's words")
    figure: float
    unit: str = Field(description="e.g. 'times the A100's speed' (after the figure)")
    source: str

    def applies_to(self, kernel: str, *, connected: bool, ncells: int, config: str | None = None) -> bool:
        """Whether this figure was published for that configuration."""
        return (
            self.kernel == kernel
            and self.connected in (None, connected)
            and self.ncells in (None, ncells)
            and self.config in (None, config)
        )


def published_for(
    figures: list[PublishedTiming], kernel: str, *, connected: bool, ncells: int, config: str | None = None
) -> list[PublishedTiming]:
    """The figures of ``figures`` published for this configuration."""
    return [f for f in figures if f.applies_to(kernel, connected=connected, ncells=ncells, config=config)]
