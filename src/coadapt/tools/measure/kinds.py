"""Per-kind calibration: how fast each job type runs on each node kind.

``coadapt calibrate --quick --cluster 1x1:native,1x1:legacy`` times, per job
type and per kind the cluster uses (plus ``native``, the reference), the
steady step of real worker groups whose ranks emulate the kind (its
environment and a cgroup with its quota, :mod:`coadapt.backends.live.kinds`):
1 worker at M0 and at 4 M0 (capped at the type's limits) for the compute,
2 workers at M0 for the all-reduce. The kinds of one configuration run one
after the other, so a slow minute of the machine hits them alike.

A factor is the measured time over the shipped profile's prediction at the
same placement and micro-batch (compute = step - sync), summed over the
steady steps (a ratio of totals, so the long-run rate: under a CPU quota most
short steps run unthrottled and a few wait out the quota, which a median
would miss), with the per-step ratios' coefficient of variation; the
simulator's truth of a kind is the profile scaled by its factor over the
reference's.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.backends.live.kinds import KindCgroups
from coadapt.jobs.launch import WorkerRecipe
from coadapt.jobs.registry import JOB_TYPES
from coadapt.jobs.warm import warm_caches
from coadapt.tools.measure.stats import drop_warmup
from coadapt.tools.measure.timing import Cell, GridSettings, Runner, measure_cell
from coadapt.world.cluster import DEFAULT_KIND, ClusterSpec, NodeSlots
from coadapt.world.costs import machine_fingerprint
from coadapt.world.kinds import KindFactor, KindSpeeds, NodeKind
from coadapt.world.profiles.profile import AppProfile

log = logging.getLogger(__name__)

REFERENCE = "native"
SETTINGS = GridSettings(repeats=1, steps=15, warmup=3, quiet_wait=0.0)
"""15 steady steps a run after 3 warm-up steps (dropped)."""


def measured_kinds(cluster: NodeSlots) -> list[str]:
    """The reference, then the cluster's other kinds (the default kind is the
    reference under its old name)."""
    return [REFERENCE, *(k for k in cluster.kinds if k not in (REFERENCE, DEFAULT_KIND))]


def needs_kinds(cluster: NodeSlots) -> bool:
    """Whether the cluster uses a kind other than the plain machine."""
    return len(measured_kinds(cluster)) > 1


def kind_cells(app: str) -> list[Cell]:
    """1 worker at M0 and 4 M0 (capped, never accumulating), 2 workers at M0."""
    lim = JOB_TYPES[app].limits
    m0 = lim.init_batch_size
    m4 = max(min(4 * m0, lim.max_local_bsz, lim.max_batch_size), m0)
    cells = [Cell(app, 1, m0), *([Cell(app, 1, m4)] if m4 != m0 else []), Cell(app, 2, m0)]
    return [c for c in cells if c.batch_size <= lim.max_batch_size]


def kind_runs(apps: Sequence[str], kinds: Sequence[str]) -> int:
    """How many worker groups :func:`measure_kinds` runs (for a progress bar)."""
    return sum(len(kind_cells(a)) for a in apps) * len(kinds)


def _cv(xs: Sequence[float]) -> float:
    mean = statistics.fmean(xs)
    return statistics.pstdev(xs) / mean if len(xs) > 1 and mean > 0 else 0.0


def kind_factor(steps: pl.DataFrame, profile: AppProfile) -> KindFactor:
    """The factor of one (type, kind) from its steady steps (columns workers,
    local_bsz, step_time, sync_time): per step, compute (1 worker) or sync
    (2 workers) over the profile's at that configuration; the ratios of their
    totals and the per-step ratios' coefficients of variation. No 2-worker
    step: sync as compute."""
    comp, sync = [], []  # (measured, predicted) per step
    for w, m, step, s in steps.select("workers", "local_bsz", "step_time", "sync_time").iter_rows():
        p_step, p_sync = profile.throughput((int(w),), float(m))
        if w == 1 and p_step - p_sync > 0:
            comp.append((step - s, p_step - p_sync))
        elif w > 1 and p_sync > 0:
            sync.append((s, p_sync))
    if not comp:
        raise ValueError(f"{profile.name}: no 1-worker steady step to compare with the profile")
    cf, ccv = _ratio(comp)
    if not sync:
        return KindFactor(cf, cf, ccv, ccv, len(comp))
    sf, scv = _ratio(sync)
    return KindFactor(cf, sf, ccv, scv, len(comp) + len(sync))


def _ratio(pairs: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Total measured over total predicted, and the per-pair ratios' CV."""
    return (sum(m for m, _ in pairs) / sum(p for _, p in pairs),
            _cv([m / p for m, p in pairs]))


def recipe_runner(recipes: tuple[WorkerRecipe, ...], cores: tuple[int, ...]) -> Runner:
    """A timing-grid runner whose rank i runs ``recipes[i]`` pinned to ``cores[i]``."""

    def run(cell: Cell, max_steps: int, seed: int, events: Path) -> list[dict[str, Any]]:
        from coadapt.eventlog import read_events
        from coadapt.jobs import RunConfig, run_group

        ckpt = events.with_suffix(".ckpt")
        res = run_group(RunConfig(job_type=cell.type, workers=cell.workers,
                                  batch_size=cell.batch_size, ckpt_dir=ckpt, events=events,
                                  seed=seed, max_steps=max_steps, verify=False, timeout=600.0,
                                  cores=cores[:cell.workers], recipes=recipes[:cell.workers]))
        if res.status == "preempted":
            raise KeyboardInterrupt(f"worker group stopped by a signal ({events})")
        if res.status == "failed":
            raise RuntimeError(f"{cell.label()}: worker group failed: {res.message} "
                               f"(logs in {ckpt})")
        return list(read_events(events))

    return run


def measure_kinds(apps: Sequence[str], kinds: Mapping[str, NodeKind], measure: Sequence[str],
                  profiles: Mapping[str, AppProfile], out: Path, cores: tuple[int, int],
                  tick: Callable[[str], None] = lambda _n: None,
                  settings: GridSettings = SETTINGS) -> KindSpeeds:
    """Time every type of ``apps`` on every kind of ``measure`` and write the
    factors to ``out`` (types without a profile are skipped: nothing to
    compare with)."""
    missing = [a for a in apps if a not in profiles]
    if missing:
        log.warning("no profile for %s: no kind factors for them", ", ".join(missing))
    apps = [a for a in apps if a in profiles]
    # Two 1-slot nodes per kind: rank r of kind i runs on node 2 i + r.
    emulate = ClusterSpec.parse(",".join(f"2x1:{k}" for k in measure))
    warm_caches()
    steady: dict[tuple[str, str], list[pl.DataFrame]] = {}
    with KindCgroups(emulate, kinds, label="calibrate") as cg, \
            tempfile.TemporaryDirectory(prefix="coadapt-kinds-") as tmp:
        for app in apps:
            if JOB_TYPES[app].prepare is not None:
                JOB_TYPES[app].prepare()
            for cell in kind_cells(app):
                for i, kind in enumerate(measure):
                    tick(f"{cell.label()} {kind}")
                    runner = recipe_runner((cg.recipe(2 * i, 0), cg.recipe(2 * i + 1, 0)), cores)
                    wd = Path(tmp) / kind
                    wd.mkdir(exist_ok=True)
                    try:
                        raw = measure_cell(cell, 0, settings, wd, runner)
                    except (RuntimeError, ValueError, OSError) as exc:
                        log.error("%s on %s failed: %s", cell.label(), kind, exc)
                        continue
                    steady.setdefault((app, kind), []).append(drop_warmup(raw, settings.warmup))
    factors: dict[str, dict[str, KindFactor]] = {}
    for (app, kind), frames in steady.items():
        try:
            factors.setdefault(app, {})[kind] = kind_factor(pl.concat(frames), profiles[app])
        except ValueError as exc:
            log.error("%s", exc)
    speeds = KindSpeeds(factors, REFERENCE, str(out), machine_fingerprint())
    out.parent.mkdir(parents=True, exist_ok=True)
    speeds.write(out)
    return speeds


def format_kinds(speeds: KindSpeeds) -> str:
    """The factors as a table: job type x kind, compute and sync with their
    cv, and both relative to the reference kind."""
    head = (f"{'job type':18s} {'kind':8s} {'compute':>8s} {'cv':>5s} {'sync':>8s} {'cv':>5s} "
            f"{'vs ' + speeds.reference:>14s} {'n':>4s}")
    lines = [head, "-" * len(head)]
    for app in sorted(speeds.factors):
        for kind, f in speeds.factors[app].items():
            rel = speeds.relative(app, kind) if speeds.reference in speeds.factors[app] else None
            vs = f"x{rel[0]:.2f} / x{rel[1]:.2f}" if rel else "-"
            lines.append(f"{app:18s} {kind:8s} {f.compute:8.3f} {f.compute_cv:5.0%} "
                         f"{f.sync:8.3f} {f.sync_cv:5.0%} {vs:>14s} {f.samples:4d}")
    return "\n".join(lines)
