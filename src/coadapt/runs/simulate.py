"""Run one workload under one policy in simulation: engine + log + summary on disk."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

from coadapt.backends.modeled.backend import ModeledBackend
from coadapt.engine.loop import Engine
from coadapt.eventlog import LOG, LOG_GZ, EventLog
from coadapt.policies import Policy, make_policy
from coadapt.policies.replay import ReplayPolicy
from coadapt.runs.fairness import append_fairness, yardstick_for
from coadapt.runs.settings import RunSettings, write_results
from coadapt.ui.progress import ProgressBar
from coadapt.world.costs import calibration_provenance
from coadapt.world.workload import Workload
from coadapt.world.world import World

KINDS = ("simulation", "prediction", "sim-measured", "replay")
GZIP_JOBS = 5_000
"""A workload of more jobs writes its log gzip'd (``events.jsonl.gz``): the
whole Philly trace logs gigabytes of allocations (an entry per node each)."""


def live_log(events_path: Path) -> str | None:
    """Why a simulation must not replace ``events_path``: it is a live run's
    log (hours of measurement), or its header cannot be read (whose log it is,
    nobody knows); None when it is absent or a simulation's. The one check,
    for a command's OUT as for each policy's log."""
    if not events_path.is_file():
        return None
    try:
        with (gzip.open(events_path, "rt") if events_path.suffix == ".gz"
              else events_path.open()) as f:
            first = json.loads(f.readline() or "{}")
    except (OSError, ValueError, UnicodeDecodeError, EOFError) as exc:
        return f"{events_path}: exists and its header cannot be read ({exc})"
    if not isinstance(first, dict) or first.get("mode") == "live":
        return f"{events_path} holds a live run's log"
    return None


def _refuse_live_log(events_path: Path) -> None:
    reason = live_log(events_path)
    if reason is not None:
        raise ValueError(f"{reason}; refusing to overwrite it: remove it or choose another --out")


def simulate_policy(world: World, workload: Workload, policy_name: str,
                    settings: RunSettings, out_dir: Path,
                    replay: ReplayPolicy | None = None,
                    kind: str = "simulation") -> dict[str, Any]:
    """Replay ``workload`` in ``world`` under one policy; writes events.jsonl
    (gzip'd above GZIP_JOBS jobs), jobs.csv and summary.json to ``out_dir``
    and returns the summary. With the
    world's measured costs jobs pay the measured live costs (start, restart,
    validation, verification, co-location) instead of one fixed restart delay.
    With ``replay`` the recorded run's allocations and batch changes replace
    the policy's. ``kind`` ("simulation", "prediction", "sim-measured",
    "replay") is recorded as run_kind in the header so a comparison can say
    what it compares."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: expected one of {', '.join(KINDS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in (out_dir / LOG, out_dir / LOG_GZ):
        _refuse_live_log(old)
    for old in (out_dir / LOG, out_dir / LOG_GZ):
        old.unlink(missing_ok=True)
    events_path = out_dir / (LOG_GZ if len(workload.jobs) > GZIP_JOBS else LOG)
    policy: Policy = replay if replay is not None else make_policy(
        policy_name, settings.policy_config())
    apps = {j.application for j in workload.jobs}
    costs = world.costs
    t0 = time.perf_counter()
    bar = ProgressBar(total=len(workload.jobs), items=len(workload.jobs),
                      label=f"{policy_name:>14}", unit="jobs", min_interval=10.0,
                      enabled=settings.show_progress)
    with EventLog(events_path) as log:
        log.header(mode=ModeledBackend.mode, run_kind=kind, policy=policy_name,
                   workload=workload.name, workload_path=str(workload.path),
                   **settings.describe(),
                   profiles={a: world.profiles[a].source for a in sorted(apps)},
                   live_costs=costs.meta.get("source") if costs is not None else None,
                   calibration=calibration_provenance(costs),
                   replay_of=replay.source if replay is not None else None)

        def progress(done: int, total: int, now: float) -> None:
            bar.advance(1, f"simulated t={now / 3600:.1f} h")

        backend = ModeledBackend(world, settings.restart_delay,
                                 replay.script if replay is not None else None,
                                 observation_noise=settings.observation_noise,
                                 seed=settings.seed)
        engine = Engine(workload, world.limits, backend, policy,
                        settings.cluster, log, interval=settings.interval,
                        restart_delay=settings.restart_delay, on_progress=progress,
                        kind_speed=settings.kind_speed(world),
                        restart_penalty=world.study.penalty_s if world.study else None,
                        horizon=settings.horizon)
        with threadpool_limits(1):  # tiny BLAS calls: extra threads only contend
            engine.run()
            if settings.fairness:  # the shared yardstick: the same for every policy
                append_fairness(log, engine.env.now, workload,
                                yardstick_for(settings, world))
        log.emit(engine.env.now, "end", None, wall_s=time.perf_counter() - t0)
    bar.close()
    return write_results(out_dir)
