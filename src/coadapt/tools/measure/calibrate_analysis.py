"""The calibration's arithmetic on event logs: no processes, no torch.

:mod:`coadapt.tools.measure.calibrate` drives real worker groups and hands
their events here; kept apart so the numbers (what counts as a steady step,
an evaluation gap, a co-location factor beyond the noise) are tested on
hand-written events.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from coadapt.world.costs import StepPoint
from coadapt.world.profiles.profile import AppProfile

Event = dict[str, Any]

WARMUP = 3  # a launch's first steps (warm-up) are not steady
MIN_COLOCATION_SAMPLES = 5


def segments(events: Sequence[Event]) -> list[list[Event]]:
    """A job's events split by launch (each starts with a start/restart event)."""
    out: list[list[Event]] = []
    for e in events:
        if e["kind"] in ("start", "restart"):
            out.append([e])
        elif out:
            out[-1].append(e)
    return out


def steady_obs(seg: Sequence[Event], lo: float = -1.0, hi: float = float("inf"),
               wall0: float = 0.0) -> list[Event]:
    """The launch's observations after warm-up whose wall time is in [lo, hi]."""
    return [e for e in seg if e["kind"] == "observation" and e.get("run_step", 0) > WARMUP
            and lo <= wall0 + e["t"] <= hi]


def steady(seg: Sequence[Event], **window: float) -> float:
    """The median steady step time (NaN if there is none)."""
    steps = [e["step_time"] for e in steady_obs(seg, **window)]
    return statistics.median(steps) if steps else float("nan")


def first_step_wall(seg: Sequence[Event], wall0: float) -> float:
    """Wall time of the launch's first step done."""
    return wall0 + next(e["t"] for e in seg if e["kind"] == "observation")


def eval_gaps(seg: Sequence[Event], steady_s: float) -> list[float]:
    """Time between the step before a validation and the step after it, less a step."""
    out, prev, pending = [], None, False
    for e in seg:
        if e["kind"] == "observation":
            if pending and prev is not None:
                out.append(e["t"] - prev - steady_s)
            prev, pending = e["t"], False
        elif e["kind"] == "validation":
            pending = True
    return out


def step_point(seg: Sequence[Event]) -> StepPoint:
    """The median steady step of one phase, as one synchronizing step (the
    profile's unit): sync + compute / micro-batches."""
    obs = steady_obs(seg)
    step = statistics.median(e["step_time"] for e in obs)
    sync = statistics.median(e["sync_time"] for e in obs)
    accum = obs[0]["accum_steps"]
    return StepPoint(workers=obs[0]["workers"], micro=obs[0]["local_bsz"],
                     step=sync + (step - sync) / (accum + 1), sync=sync, samples=len(obs))


def merge_points(points: Sequence[StepPoint]) -> list[StepPoint]:
    """One point per configuration (the median when a phase repeated it)."""
    by: dict[tuple[int, int], list[StepPoint]] = defaultdict(list)
    for p in points:
        by[(p.workers, p.micro)].append(p)
    return [StepPoint(k[0], k[1], statistics.median(p.step for p in ps),
                      statistics.median(p.sync for p in ps), sum(p.samples for p in ps))
            for k, ps in sorted(by.items())]


def charged(alone: Sequence[float], beside: Sequence[float], seed: int = 0) -> float:
    """median(beside) / median(alone) if a bootstrap 95% interval of that
    ratio excludes 1 and there are at least MIN_COLOCATION_SAMPLES beside;
    else 1.0. Two samples swung +-20% on a shared machine here: a factor (and
    above all a speed-up) is charged only when measured beyond the noise."""
    a, b = np.asarray(alone, float), np.asarray(beside, float)
    if len(b) < MIN_COLOCATION_SAMPLES or len(a) < 2:
        return 1.0
    rng = np.random.default_rng(seed)
    ratios = (np.median(rng.choice(b, (2000, len(b))), axis=1)
              / np.median(rng.choice(a, (2000, len(a))), axis=1))
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(np.median(b) / np.median(a)) if lo > 1.0 or hi < 1.0 else 1.0


def colocation_factors(apps: Sequence[str], alone: dict[str, list[float]],
                       beside: dict[tuple[str, str], list[float]]) -> dict[str, dict[str, float]]:
    """Per type, the factor next to each type and ``any`` (every neighbour
    pooled, what the simulator charges), each only where it is measured
    beyond the noise (:func:`charged`); 1.0 otherwise."""
    out = {}
    for a in apps:
        out[a] = {b: charged(alone[a], beside[(a, b)]) for b in apps}
        out[a]["any"] = charged(alone[a], [v for b in apps for v in beside[(a, b)]])
    return out


def grid_factors(points: Sequence[StepPoint], profile: AppProfile
                 ) -> tuple[float, float, float | None]:
    """(compute factor, sync factor, compute spread): the calibrated steady
    compute and sync over the profile's at the same configurations (median
    over them), and the factors' relative half-range. The simulator applies
    them to the whole grid."""
    comp, sync = [], []
    for p in points:
        step, s = (float(x) for x in profile.throughput((p.workers,), p.micro))
        if step - s > 0:
            comp.append((p.step - p.sync) / (step - s))
        if p.workers > 1 and s > 0 and p.sync > 0:
            sync.append(p.sync / s)
    if not comp:
        return 1.0, 1.0, None
    cf = statistics.median(comp)
    spread = (max(comp) - min(comp)) / 2 / cf if len(comp) > 1 else None
    return cf, statistics.median(sync) if sync else cf, spread
