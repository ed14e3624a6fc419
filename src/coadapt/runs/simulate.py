"""Run one workload under one policy in simulation: engine + log + summary on disk."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

from coadapt.backends.modeled.backend import ModeledBackend
from coadapt.engine.loop import Engine
from coadapt.eventlog import EventLog
from coadapt.policies import Policy, make_policy
from coadapt.policies.replay import ReplayPolicy
from coadapt.runs.fairness import append_fairness, yardstick_for
from coadapt.runs.settings import RunSettings, write_results
from coadapt.ui.progress import ProgressBar
from coadapt.world.costs import LiveCosts, refine_profiles
from coadapt.world.limits import declared_limits
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.workload import Workload

KINDS = ("simulation", "prediction", "sim-measured", "replay")


def _refuse_live_log(events_path: Path) -> None:
    """A live log is hours of measurement; a simulation replaces only a log
    whose header says it is not live (an unreadable one is left alone too)."""
    if not events_path.exists():
        return
    try:
        with events_path.open() as f:
            first = json.loads(f.readline() or "{}")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{events_path}: exists and its header cannot be read ({exc}); "
                         "refusing to overwrite it: remove it or choose another --out") from None
    if not isinstance(first, dict) or first.get("mode") == "live":
        raise ValueError(f"{events_path} holds a live run's log; refusing to overwrite it "
                         "(choose another --out)")


def simulate_policy(workload: Workload, profiles: Mapping[str, AppProfile], policy_name: str,
                    settings: RunSettings, out_dir: Path,
                    costs: LiveCosts | None = None,
                    replay: ReplayPolicy | None = None,
                    kind: str = "simulation") -> dict[str, Any]:
    """Replay ``workload`` under one policy; writes events.jsonl, jobs.csv and
    summary.json to ``out_dir`` and returns the summary. With ``costs`` jobs
    pay the measured live costs (start, restart, validation, verification,
    co-location) instead of one fixed restart delay. With ``replay`` the
    recorded run's allocations and batch changes replace the policy's.
    ``kind`` ("simulation", "prediction", "sim-measured", "replay") is recorded as run_kind
    in the header so a comparison can say what it compares."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: expected one of {', '.join(KINDS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    events_path = out_dir / "events.jsonl"
    _refuse_live_log(events_path)
    events_path.unlink(missing_ok=True)
    policy: Policy = replay if replay is not None else make_policy(
        policy_name, settings.policy_config())
    apps = {j.application for j in workload.jobs}
    limits = declared_limits(apps, profiles)
    if costs is not None:
        profiles = refine_profiles(profiles, costs)
    t0 = time.perf_counter()
    bar = ProgressBar(total=len(workload.jobs), items=len(workload.jobs),
                      label=f"{policy_name:>14}", unit="jobs", min_interval=10.0,
                      enabled=settings.show_progress)
    with EventLog(events_path) as log:
        log.header(mode=ModeledBackend.mode, run_kind=kind, policy=policy_name,
                   workload=workload.name, workload_path=str(workload.path),
                   **settings.describe(),
                   profiles={a: profiles[a].source for a in sorted(apps)},
                   live_costs=costs.meta.get("source") if costs is not None else None,
                   replay_of=replay.source if replay is not None else None)

        def progress(done: int, total: int, now: float) -> None:
            bar.advance(1, f"simulated t={now / 3600:.1f} h")

        backend = ModeledBackend(profiles, settings.restart_delay, costs,
                                 replay.script if replay is not None else None,
                                 observation_noise=settings.observation_noise,
                                 seed=settings.seed,
                                 efficiency_truth=settings.efficiency_truth)
        engine = Engine(workload, limits, backend, policy,
                        settings.cluster, log, interval=settings.interval,
                        restart_delay=settings.restart_delay, on_progress=progress)
        with threadpool_limits(1):  # tiny BLAS calls: extra threads only contend
            engine.run()
            if settings.fairness:  # the shared yardstick: the same for every policy
                append_fairness(log, engine.env.now, workload,
                                yardstick_for(settings, profiles, limits, costs))
        log.emit(engine.env.now, "end", None, wall_s=time.perf_counter() - t0)
    bar.close()
    return write_results(out_dir)
