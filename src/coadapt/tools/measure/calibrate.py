"""Measure what a live job pays besides its profiled steps (``coadapt calibrate``).

Per job type, one job is cycled through the configurations live jobs run
most, (workers, batch) = (1, M0), (2, 2 M0), (1, 4 M0), (2, 4 M0), (1, M0),
each phase a few seconds of real training with frequent validations (its
target set out of reach), relaunched from its checkpoint in between, then
verified in a fresh process; a second job is started fresh on 2 workers.
From the jobs' own event logs:

* ``start[K]``: launch until the first step is done, less one steady step;
* ``restart[K]``: stop request until the relaunch's first step is done (stop
  latency, checkpoint, process start, resume), less one steady step;
* ``eval[K]``: the gap a validation and its checkpoint leave between two
  steps, less one steady step;
* ``verify``: wall time of ``python -m coadapt.jobs.verify`` on the checkpoint;
* ``steps``: the median steady step at each configuration. The profile's
  timing grid measures four micro-batch sizes and interpolates between them,
  which missed M0 itself by up to 25%; these points refine it where live jobs
  actually run.

Then co-location: every pair of types runs side by side, one worker each on
its own core, in both core orders, between runs of each type alone on each
core. ``colocation[other]`` is a type's median step next to ``other`` over its
median alone. Everything raw is kept in ``meta.samples``.

This module drives the real worker groups; what is computed from their event
logs is in :mod:`coadapt.tools.measure.calibrate_analysis`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coadapt.eventlog.tail import EventTail
from coadapt.jobs.group import THREAD_ENV, Group, RunConfig
from coadapt.jobs.procs import helper_preexec
from coadapt.jobs.registry import JOB_TYPES
from coadapt.jobs.warm import warm_caches
from coadapt.tools.measure.calibrate_analysis import (
    MIN_COLOCATION_SAMPLES,
    colocation_factors,
    eval_gaps,
    first_step_wall,
    grid_factors,
    merge_points,
    segments,
    steady,
    step_point,
)
from coadapt.world.costs import (
    CALIBRATION_POLL_S,
    LIVE_POLL_S,
    LiveCosts,
    TypeCosts,
    machine_fingerprint,
)
from coadapt.world.profiles.profile import AppProfile

log = logging.getLogger(__name__)

__all__ = ["MIN_COLOCATION_SAMPLES", "QUICK", "CalibrationSettings", "calibrate",
           "colocation_factors", "grid_factors", "measure_pairs", "measure_type",
           "quick_calibration", "quick_phases"]


@dataclass(frozen=True)
class CalibrationSettings:
    phase_s: float = 6.0  # training per phase, after the first step
    pair_s: float = 6.0  # training side by side per pair run
    validations_per_phase: float = 3.0  # validations per phase (eval cost samples)
    cycle: tuple[tuple[int, int], ...] = ((1, 1), (2, 2), (1, 4), (2, 4), (1, 1))
    """(workers, batch as a multiple of M0) per phase; each is a relaunch."""
    verify_repeats: int = 2
    cores: tuple[int, int] = (0, 1)


def _unreachable(app: str) -> float:
    return 2.0 if JOB_TYPES[app].higher_is_better else 0.0


@dataclass
class _Run:
    """One job's folder and its event stream, read incrementally."""

    app: str
    dir: Path
    tail: EventTail
    events: list[dict[str, Any]]

    @classmethod
    def new(cls, app: str, root: Path, name: str) -> _Run:
        d = root / name
        return cls(app, d, EventTail(d / "events.jsonl"), [])

    def read(self) -> list[dict[str, Any]]:
        new = self.tail.read()
        self.events.extend(new)
        return new

    def wall0(self) -> float:
        return float(json.loads((self.dir / "job.json").read_text())["first_start_wall"])


def _launch(run: _Run, workers: int, batch: int, eval_every: float, cores: Sequence[int],
            resume: bool) -> Group:
    cfg = RunConfig(job_type=run.app, workers=workers, batch_size=batch, ckpt_dir=run.dir,
                    resume=resume, events=run.dir / "events.jsonl", job_id=run.dir.name,
                    target=_unreachable(run.app), eval_every=eval_every, verify=False,
                    cores=tuple(cores[:workers]), worker_timeout=60.0, exit_grace=20.0)
    return Group(cfg).start()


def _stepping(run: _Run, since: int) -> bool:
    """Has the launch whose events start at index ``since`` made a step yet?"""
    return any(e["kind"] == "observation" for e in run.events[since:])


def _train(runs: Sequence[tuple[_Run, Group]], seconds: float) -> tuple[float, float, float]:
    """Poll until every group has stepped for ``seconds`` together; then stop
    them gracefully. Returns walls (all stepping, stop request, all exited)."""
    t_all = None
    since = [len(r.events) for r, _ in runs]
    while True:
        for run, group in runs:
            run.read()
            if group.poll() is not None:
                raise RuntimeError(f"{run.app}: calibration group ended early; "
                                   f"see {run.dir / 'logs'}")
        if t_all is None and all(_stepping(r, i) for (r, _), i in zip(runs, since, strict=True)):
            t_all = time.time()
        if t_all is not None and time.time() - t_all >= seconds:
            break
        time.sleep(0.05)
    t_stop = time.time()
    for _, group in runs:
        group.request_stop()
    for run, group in runs:
        res = group.wait(CALIBRATION_POLL_S)
        run.read()
        if res.status != "preempted":
            raise RuntimeError(f"{run.app}: expected a graceful stop, got {res.status} "
                               f"({res.message})")
    return t_all, t_stop, time.time()


def _eval_every(app: str, step_s: float | None, per_phase: float, phase_s: float) -> float:
    """Validation interval (progress) that gives ``per_phase`` validations a phase."""
    if not step_s:
        return JOB_TYPES[app].eval_every
    return max(5.0, round(phase_s / per_phase / step_s))


def measure_type(app: str, root: Path, s: CalibrationSettings,
                 step_s: float | None = None,
                 tick: Callable[[str], None] = lambda _n: None) -> tuple[TypeCosts, dict]:
    """Start, restart, validation, verification costs and steady steps of one type."""
    m0 = JOB_TYPES[app].limits.init_batch_size
    every = _eval_every(app, step_s, s.validations_per_phase, s.phase_s)
    run = _Run.new(app, root, f"{app}-cycle")
    stops: list[float] = []
    launches: list[tuple[float, int]] = []
    for i, (k, mult) in enumerate(s.cycle):
        tick(f"{app} K={k} M={mult * m0}")
        t_launch = time.time()
        group = _launch(run, k, mult * m0, every, s.cores, resume=i > 0)
        launches.append((t_launch, k))
        stops.append(_train([(run, group)], s.phase_s)[1])
    wall0 = run.wall0()
    start: dict[int, list[float]] = defaultdict(list)
    restart: dict[int, list[float]] = defaultdict(list)
    evals: dict[int, list[float]] = defaultdict(list)
    points = []
    for i, (seg, (t_launch, k)) in enumerate(zip(segments(run.events), launches, strict=True)):
        steady_s = steady(seg)
        first = first_step_wall(seg, wall0)
        if i == 0:
            start[k].append(first - t_launch - steady_s)
        else:
            restart[k].append(first - stops[i - 1] - steady_s)
        evals[k].extend(eval_gaps(seg, steady_s))
        points.append(step_point(seg))
    tick(f"{app} verify")
    verify = []
    for _ in range(s.verify_repeats):
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "coadapt.jobs.verify", str(run.dir), "--json"],
                       env={**os.environ, **THREAD_ENV}, stdout=subprocess.DEVNULL, check=False,
                       preexec_fn=helper_preexec((s.cores[0],)))
        verify.append(time.time() - t0)
    tick(f"{app} fresh K=2")
    fresh = _Run.new(app, root, f"{app}-fresh2")
    t_launch = time.time()
    _train([(fresh, _launch(fresh, 2, 2 * m0, every, s.cores, resume=False))], 1.0)
    seg = segments(fresh.events)[0]
    start[2].append(first_step_wall(seg, fresh.wall0()) - t_launch - steady(seg))
    # a cost is a time less one steady step: noise can take it just below 0, which means 0
    med = {name: {k: max(statistics.median(v), 0.0) for k, v in d.items() if v}
           for name, d in (("start", start), ("restart", restart), ("eval", evals))}
    costs = TypeCosts(start=med["start"], restart=med["restart"], eval=med["eval"],
                      verify=statistics.median(verify), steps=merge_points(points))
    raw = {"start": dict(start), "restart": dict(restart), "eval": dict(evals),
           "verify": verify, "eval_every": every, "steps": [p.to_json() for p in points]}
    return costs, raw


def measure_pairs(apps: Sequence[str], root: Path, s: CalibrationSettings,
                  tick: Callable[[str], None] = lambda _n: None) -> tuple[dict, dict]:
    """Step-time factor of each type next to each other type (1 worker each)."""
    alone: dict[str, list[float]] = defaultdict(list)
    beside: dict[tuple[str, str], list[float]] = defaultdict(list)
    n = 0

    def once(placed: Sequence[str]) -> None:
        nonlocal n
        n += 1
        runs = []
        for core, app in zip(s.cores, placed, strict=False):
            run = _Run.new(app, root, f"co{n}-{app}-{core}")
            runs.append((run, _launch(run, 1, JOB_TYPES[app].limits.init_batch_size, 1e9, (core,),
                                      resume=False)))
        t_all, t_stop, _ = _train(runs, s.pair_s)
        meds = [steady(segments(r.events)[0], lo=t_all, hi=t_stop, wall0=r.wall0())
                for r, _ in runs]
        if len(placed) == 1:
            alone[placed[0]].append(meds[0])
        else:
            beside[(placed[0], placed[1])].append(meds[0])
            beside[(placed[1], placed[0])].append(meds[1])

    for app in apps:  # alone on each core, before the pairs
        tick(f"{app} alone")
        once([app])
    for a, b in itertools.combinations_with_replacement(apps, 2):
        tick(f"{a} + {b}")
        once([a, b])
        if a != b:
            once([b, a])
    for app in apps:  # and alone again after them, on the other core
        tick(f"{app} alone")
        runs = [(r := _Run.new(app, root, f"co-end-{app}"),
                 _launch(r, 1, JOB_TYPES[app].limits.init_batch_size, 1e9, s.cores[1:], resume=False))]
        t_all, t_stop, _ = _train(runs, s.pair_s)
        alone[app].append(steady(segments(r.events)[0], lo=t_all, hi=t_stop, wall0=r.wall0()))
    factors = colocation_factors(apps, alone, beside)
    raw = {"alone_step_s": dict(alone),
           "beside_step_s": {f"{a}|{b}": v for (a, b), v in beside.items()}}
    return factors, raw


def calibrate(apps: Sequence[str], out: Path, s: CalibrationSettings,
              steps: dict[str, float] | None = None,
              tick: Callable[[str], None] = lambda _n: None,
              workdir: Path | None = None,
              profiles: Mapping[str, AppProfile] | None = None,
              pairs: bool = True) -> LiveCosts:
    """Measure every cost for ``apps`` and write ``out`` atomically; with
    ``profiles``, per type the compute and sync factors against them."""
    t0 = time.monotonic()
    warm_caches()
    with tempfile.TemporaryDirectory(prefix="coadapt-calibrate-", dir=workdir) as tmp:
        root = Path(tmp)
        per_type, raw = {}, {}
        for app in apps:
            per_type[app], raw[app] = measure_type(app, root, s, (steps or {}).get(app), tick)
        if pairs:
            factors, pair_raw = measure_pairs(apps, root, s, tick)
        else:
            factors, pair_raw = {}, {"note": "not measured (quick): charged as 1.0"}
    types = {}
    for app, c in per_type.items():
        cf, sf, spread = (grid_factors(c.steps, profiles[app]) if profiles and app in profiles
                          else (1.0, 1.0, None))
        types[app] = TypeCosts(c.start, c.restart, c.eval, c.verify, factors.get(app, {}),
                               c.steps, cf, sf, spread)
    meta = {"source": str(out), "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "host": socket.gethostname(), "machine": machine_fingerprint(),
            "cores": list(s.cores), "wall_s": round(time.monotonic() - t0, 1),
            "poll_s": CALIBRATION_POLL_S, "live_poll_s": LIVE_POLL_S, "settings": {
                "phase_s": s.phase_s, "pair_s": s.pair_s, "pairs": pairs,
                "cycle": [list(c) for c in s.cycle], "verify_repeats": s.verify_repeats},
            "samples": {"types": raw, "pairs": pair_raw}}
    costs = LiveCosts(types, meta)
    out.parent.mkdir(parents=True, exist_ok=True)
    costs.save(out)
    return costs


QUICK = CalibrationSettings(phase_s=3.0, pair_s=3.0, validations_per_phase=2.0,
                            cycle=((1, 1), (2, 2), (1, 4)), verify_repeats=1)


def quick_phases(apps: Sequence[str]) -> int:
    """How many ticks :func:`quick_calibration` makes (for a progress bar)."""
    return len(apps) * (len(QUICK.cycle) + 2)


def quick_calibration(apps: Sequence[str], out: Path,
                      profiles: Mapping[str, AppProfile] | None,
                      tick: Callable[[str], None] = lambda _n: None) -> LiveCosts:
    """The calibration ``coadapt live`` runs first (about 2-3 minutes for the
    four types on 2 cores): per type three short phases (1 worker at M0, 2 at
    2 M0, 1 at 4 M0: a start, two restarts, validations, steady steps), one
    verification and a fresh 2-worker start; no co-location pairs (charged as
    1.0: too few samples to tell from noise in that time)."""
    from coadapt.backends.live.cores import usable_cores

    cores = usable_cores()
    if len(cores) < 2:
        raise ValueError(f"calibration needs 2 cores; this machine has {len(cores)} usable")
    steps = {a: float(p.throughput((1,), p.limits.init_batch_size)[0])
             for a, p in (profiles or {}).items() if a in apps}
    s = dataclasses.replace(QUICK, cores=(cores[0], cores[1]))
    return calibrate(apps, out, s, steps, tick, profiles=profiles, pairs=False)
