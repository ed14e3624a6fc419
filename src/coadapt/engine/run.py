"""What every run of the engine shares, simulated or live: its settings, the
fairness yardstick in the log header, and the files written at the end."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coadapt.engine.cluster import ClusterSpec
from coadapt.eventlog import read_events
from coadapt.metrics import job_table, summarize
from coadapt.models.batching import JobLimits
from coadapt.profiling.profile import AppProfile
from coadapt.sim.isolation import isolated_times


@dataclass(frozen=True)
class RunSettings:
    cluster: ClusterSpec
    interval: float = 60.0
    restart_delay: float = 30.0
    seed: int = 0
    p: float = -1.0
    show_progress: bool = True


def t_iso_table(profiles: Mapping[str, AppProfile], limits: Mapping[str, JobLimits],
                apps: set[str], s: RunSettings) -> dict[str, list[float]]:
    """T_iso(k) per job type (the experimenter's yardstick, from the profile)."""
    per_node = max(s.cluster.slots_per_node)
    out = {}
    for app in sorted(apps):
        prof = profiles[app]
        key = ("t_iso", s.cluster.total_slots, per_node, s.restart_delay, limits[app])
        if key not in prof._cache:
            prof._cache[key] = isolated_times(prof, limits[app], s.cluster.total_slots, per_node,
                                              s.restart_delay)
        out[app] = prof._cache[key]
    return out


def write_results(out_dir: Path) -> dict[str, Any]:
    """jobs.csv and summary.json from ``out_dir/events.jsonl`` alone."""
    events = list(read_events(out_dir / "events.jsonl"))
    summary = summarize(events)
    job_table(events).write_csv(out_dir / "jobs.csv")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
