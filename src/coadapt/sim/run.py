"""Run one workload under one policy: engine + log + summary on disk."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

from coadapt.eventlog import EventLog, read_events
from coadapt.metrics import job_table, summarize
from coadapt.policies import PolicyConfig, make_policy
from coadapt.profiling.profile import AppProfile
from coadapt.report.progress import ProgressBar
from coadapt.sim.cluster import ClusterSpec
from coadapt.sim.engine import Engine
from coadapt.sim.isolation import isolated_times
from coadapt.workloads.workload import Workload


@dataclass(frozen=True)
class SimSettings:
    cluster: ClusterSpec
    interval: float = 60.0
    restart_delay: float = 30.0
    seed: int = 0
    p: float = -1.0
    show_progress: bool = True


def _t_iso(profiles: dict[str, AppProfile], apps: set[str], s: SimSettings) -> dict:
    per_node = max(s.cluster.slots_per_node)
    out = {}
    for app in sorted(apps):
        prof = profiles[app]
        key = ("t_iso", s.cluster.total_slots, per_node, s.restart_delay)
        if key not in prof._cache:
            prof._cache[key] = isolated_times(prof, s.cluster.total_slots, per_node,
                                              s.restart_delay)
        out[app] = prof._cache[key]
    return out


def simulate_policy(workload: Workload, profiles: dict[str, AppProfile], policy_name: str,
                    settings: SimSettings, out_dir: Path) -> dict[str, Any]:
    """Replay ``workload`` under one policy; writes events.jsonl, jobs.csv and
    summary.json to ``out_dir`` and returns the summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    events_path = out_dir / "events.jsonl"
    events_path.unlink(missing_ok=True)
    policy = make_policy(policy_name, PolicyConfig(settings.restart_delay, settings.interval,
                                                   settings.p))
    apps = {j.application for j in workload.jobs}
    t0 = time.perf_counter()
    bar = ProgressBar(total=len(workload.jobs), items=len(workload.jobs), label=f"{policy_name:>14}",
                      unit="jobs", min_interval=10.0, enabled=settings.show_progress)
    with EventLog(events_path) as log:
        log.header(mode="simulate", policy=policy_name, workload=workload.name,
                   workload_path=str(workload.path), cluster=str(settings.cluster),
                   total_slots=settings.cluster.total_slots, interval=settings.interval,
                   restart_delay=settings.restart_delay, seed=settings.seed,
                   profiles={a: profiles[a].source for a in sorted(apps)},
                   t_iso=_t_iso(profiles, apps, settings))

        def progress(done: int, total: int, now: float) -> None:
            bar.advance(1, f"simulated t={now / 3600:.1f} h")

        engine = Engine(workload, profiles, policy, settings.cluster, log,
                        interval=settings.interval, restart_delay=settings.restart_delay,
                        on_progress=progress)
        with threadpool_limits(1):  # tiny BLAS calls: extra threads only contend
            engine.run()
        log.emit(engine.env.now, "end", None, wall_s=time.perf_counter() - t0)
    bar.close()
    events = list(read_events(events_path))
    summary = summarize(events)
    job_table(events).write_csv(out_dir / "jobs.csv")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
