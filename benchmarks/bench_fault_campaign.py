"""The fault campaign as a benchmark module: `python benchmarks/run.py fault_campaign` runs
benchmarks/fault_campaign.py (every fault class, ~340 hook runs; `--quick` one per variant)
and reports its totals: runs recorded correctly, misclassified, silent, lost."""

from __future__ import annotations

from fault_campaign import bench

__all__ = ["bench"]
