"""Statistical efficiency as the profiler measured it: samples to target per batch size.

Pollux's gain r(S) (``models.goodput.gain``) is the *policies'* model of how
much a step at batch M is worth. The profiler also ran every job type to its
validation target at several batch sizes and seeds, so the simulator's truth
need not be that model: a modeled job's progress per step is the gain
formula, fed with the profile's gradient statistics, times a per-batch
correction c(M), chosen so that a job run at a constant batch M needs exactly
the samples the measured runs needed (the median over the seeds that reached
the target). The formula keeps the *shape* along training (large batches are
worth less early, more late); the measurements fix the *totals*. Between
measured batch sizes log c is interpolated linearly in log M; beyond them c is
held at the nearest measured value (nothing measured says more).

Why a correction and not the curve alone: the engine's progress unit is the
formula's (iterations at M0), and epochs, validations and completion are
defined in it (``AppProfile.epoch_progress``, ``completion_epoch``); scaling
the rate keeps all of them and moves only how fast a batch gets there.

The spread across seeds is kept (``SamplesToTarget.low``/``high``): it says how
far apart two runs of one configuration land, which is the floor for any
claim about a batch size's efficiency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coadapt.models.goodput import gain
from coadapt.world.checks import finite


@dataclass(frozen=True)
class SamplesToTarget:
    """Measured samples to the validation target per batch size (ascending)."""

    batch_sizes: np.ndarray
    median: np.ndarray
    low: np.ndarray  # min over the seeds that reached the target
    high: np.ndarray  # max over them
    seeds: np.ndarray  # how many seeds reached it

    @classmethod
    def from_profile_json(cls, curves: Mapping[str, Any], where: str) -> SamplesToTarget | None:
        """From a CPU profile's ``curves`` block (``by_batch_size`` -> ``runs``);
        None when no batch size has a run that reached the target. ValueError
        names the batch size and field of a malformed entry."""
        by = curves.get("by_batch_size") if isinstance(curves, Mapping) else curves
        if not isinstance(by or {}, Mapping):
            raise ValueError(f"{where}: curves.by_batch_size: expected an object")
        rows = []
        for key, entry in (by or {}).items():
            at = f"{where}: curves.by_batch_size[{key!r}]"
            try:
                batch = float(key)
            except ValueError:
                raise ValueError(f"{at}: the key is not a batch size") from None
            runs_in = entry.get("runs", []) if isinstance(entry, Mapping) else None
            if not isinstance(runs_in, list) or not all(isinstance(r, Mapping) for r in runs_in):
                raise ValueError(f"{at}: field 'runs': expected a list of objects")
            runs = [r.get("samples") for r in runs_in if r.get("reached")]
            if not runs:
                continue
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in runs):
                raise ValueError(f"{at}: field 'runs': expected runs with 'reached' and "
                                 "a number of 'samples'")
            if not (math.isfinite(batch) and batch > 0 and all(finite(v) and v > 0 for v in runs)):
                raise ValueError(f"{at}: batch size and 'samples' must be > 0 and finite")
            runs = [float(v) for v in runs]
            rows.append((batch, float(np.median(runs)), min(runs), max(runs), len(runs)))
        rows.sort()
        if not rows:
            return None
        cols = np.array(rows, dtype=float).T
        return cls(cols[0], cols[1], cols[2], cols[3], cols[4].astype(int))

    def samples(self, batch_size: float | np.ndarray) -> np.ndarray:
        """Median samples to target, interpolated in log-log (held beyond the ends)."""
        return np.exp(np.interp(np.log(batch_size), np.log(self.batch_sizes),
                                np.log(self.median)))


@dataclass(eq=False)
class MeasuredEfficiency:
    """c(M) for one profile: the measured samples to target over the formula's.

    ``formula_samples`` is what the simulator's formula truth needs at a
    constant batch M: per epoch e up to the completion epoch at M, the epoch's
    progress over the gain there, times M. Built lazily per (M, M0)."""

    measured: SamplesToTarget
    profile: Any  # AppProfile (a forward reference would import in a circle)
    _cache: dict[tuple[float, float], float] = field(default_factory=dict, repr=False)
    _logs: dict[float, np.ndarray] = field(default_factory=dict, repr=False)

    def formula_samples(self, batch_size: float, m0: float) -> float:
        p = self.profile
        ce = p.completion_epoch(batch_size)
        steps = np.diff(p.epoch_progress)[: ce + 1]
        sqr, var = p.grad_stats_grid(np.array([float(batch_size)]))
        g = gain(sqr[: len(steps), 0], var[: len(steps), 0], batch_size / m0)
        return float(np.sum(steps / g) * batch_size)

    def _log_factors(self, m0: float) -> np.ndarray:
        b = self.measured.batch_sizes
        return np.log([self.formula_samples(x, m0) for x in b]) - np.log(self.measured.median)

    def factor(self, batch_size: float, m0: float) -> float:
        """c(M): multiply the formula's progress per step by this."""
        key = (float(batch_size), float(m0))
        hit = self._cache.get(key)
        if hit is None:
            logs = self._logs.get(key[1])
            if logs is None:
                logs = self._logs[key[1]] = self._log_factors(key[1])
            b = self.measured.batch_sizes
            hit = self._cache[key] = float(np.exp(np.interp(np.log(batch_size), np.log(b), logs)))
        return hit

    def table(self, m0: float) -> list[dict[str, float]]:
        """Per measured batch size: measured samples (median, min, max, seeds),
        the formula's, and their ratio: where truth and model disagree."""
        s = self.measured
        out = []
        for i, b in enumerate(s.batch_sizes):
            f = self.formula_samples(float(b), m0)
            out.append({"batch_size": float(b), "measured": float(s.median[i]),
                        "low": float(s.low[i]), "high": float(s.high[i]),
                        "seeds": int(s.seeds[i]), "formula": f,
                        "formula_over_measured": f / float(s.median[i])})
        return out
