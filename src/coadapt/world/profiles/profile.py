"""The application-profile interface used by the simulator.

A profile answers the questions the simulated "real world" needs: how long a
step takes on a placement at a micro-batch size, what gradient statistics a job
sees at batch M in epoch e, where epochs end (in progress, i.e. iterations at
M0), and when a job is complete. Policies never see it; only the engine's
modeled jobs do (and a baseline explicitly named an oracle).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl
from scipy.interpolate import LinearNDInterpolator
from threadpoolctl import threadpool_limits

from coadapt.models.batching import JobLimits
from coadapt.models.goodput import PerfParams, fit_perf_params
from coadapt.models.goodput import step_time as model_step_time
from coadapt.world.profiles import extrapolate
from coadapt.world.profiles.efficiency import MeasuredEfficiency, SamplesToTarget


class ProfileError(ValueError):
    """A profile file is missing or malformed; the message names file, line, field."""


def normalize_placement(placement: tuple[int, ...]) -> tuple[int, ...]:
    """Drop empty nodes and rotate to the lexicographically smallest rotation
    (the AdaptDL traces key placements that way)."""
    p = tuple(int(x) for x in placement if x)
    if not p:
        return p
    return min(p[i:] + p[:i] for i in range(len(p)))


@dataclass(frozen=True)
class Spread:
    """How much one job type's own measurements scatter between repeats, as
    coefficients of variation (std / mean) that the profiler measured: the
    simulator's ``--observation-noise`` scales its report errors by them, so
    a job type whose timings were noisy on the real machine reports noisily.
    Zeros: nothing measured (e.g. the AdaptDL GPU traces: one row per
    configuration, one seed per curve). How a CPU profile derives them:
    :func:`coadapt.world.profiles.cpu_format.measured_spread`."""

    step_cv: float = 0.0  # step time between repeated launches of one configuration
    sync_cv: float = 0.0  # all-reduce (sync) time, likewise
    noise_cv: float = 0.0  # gradient noise scale phi between seeds at one batch and progress


@dataclass(frozen=True, eq=False)
class AppProfile:
    """Measured behaviour of one job type (see module docstring).

    ``limits``: the limits this profile was measured under. The engine takes a
    job's limits from its declaration instead (``world.limits``); for imported
    GPU traces these are the reference simulator's declarations."""

    name: str
    limits: JobLimits
    placements: pl.DataFrame
    scalability: pl.DataFrame | None
    validation: dict[int, pl.DataFrame]
    completion_epochs: int | None = None
    target: float | None = None
    higher_is_better: bool = True
    source: str = ""
    spread: Spread = field(default_factory=Spread)
    samples_to_target: SamplesToTarget | None = None  # measured runs to target (CPU profiles)
    by_kind: Mapping[str, AppProfile] = field(default_factory=dict)
    """Per kind of node (a GPU type), the step tables measured on it; this
    profile's own tables are its reference kind's. Empty: one kind."""
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # ---------------------------------------------------------------- throughput
    @cached_property
    def _placement_tables(self) -> dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]]:
        out = {}
        df = self.placements.sort("local_bsz")
        for key, grp in df.group_by("placement"):
            p = normalize_placement(tuple(int(c) for c in str(key[0])))
            ys = grp.select("step_time", "sync_time").to_numpy()
            out[p] = (grp["local_bsz"].to_numpy().astype(float), ys)
        return out

    def measured_placements(self) -> list[tuple[int, ...]]:
        """Placements (slots per node, normalized) with measured step times."""
        return list(self._placement_tables)

    @property
    def single_machine(self) -> bool:
        """Measured on one machine only (a CPU profile): nothing says how its
        all-reduce behaves across nodes."""
        multi = any(len(p) > 1 for p in self._placement_tables)
        if self.scalability is not None and self.scalability.height:
            multi = multi or bool((self.scalability["num_nodes"] > 1).any())
        return not multi

    @cached_property
    def _all_points(self) -> tuple[np.ndarray, np.ndarray]:
        rows = []
        for p, (m, ys) in self._placement_tables.items():
            for mi, (st, sy) in zip(m, ys, strict=True):
                rows.append((len(p), sum(p), mi, st, sy))
        if self.scalability is not None and self.scalability.height:
            s = self.scalability.select(
                "num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"
            ).to_numpy()
            rows.extend(map(tuple, s))
        arr = np.array(rows, dtype=float)
        return arr[:, :3], arr[:, 3:]

    @cached_property
    def _interpolator(self) -> LinearNDInterpolator | None:
        xs, ys = self._all_points
        # Average duplicates of (nodes, replicas, m), as the reference does.
        keys, inv = np.unique(xs, axis=0, return_inverse=True)
        means = np.zeros((len(keys), 2))
        np.add.at(means, inv.ravel(), ys)
        means /= np.bincount(inv.ravel())[:, None]
        if len(keys) < 4 or np.linalg.matrix_rank(keys - keys[0]) < 3:
            return None
        return LinearNDInterpolator(keys, means)

    @cached_property
    def fitted_perf(self) -> PerfParams:
        """The throughput model fitted to every measured point: used where the
        measurements do not reach (e.g. 16 nodes from a 2-core CPU profile).
        Rounded to 9 significant digits: numpy's reductions round differently
        with the threads and the memory alignment at hand, the optimizer then
        ends elsewhere in the last digits, and near-ties in a policy's choice
        made simulated results depend on what had run before in the process."""
        xs, ys = self._all_points
        with threadpool_limits(1):
            fit = fit_perf_params(xs[:, 0], xs[:, 1], xs[:, 2], ys[:, 0], ys[:, 1])
        return PerfParams(*(float(f"{v:.9g}") for v in fit.as_array()))

    def throughput(self, placement: tuple[int, ...], micro: float) -> tuple[float, float]:
        """(step_time, sync_time) in seconds for one synchronizing step."""
        p = normalize_placement(placement)
        key = ("tp", p, float(micro))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        table = self._placement_tables.get(p)
        if table is not None:
            m, ys = table
            res = (float(np.interp(micro, m, ys[:, 0])), float(np.interp(micro, m, ys[:, 1])))
        else:
            res = self._interpolated(p, float(micro))
        self._cache[key] = res
        return res

    def _interpolated(self, p: tuple[int, ...], micro: float) -> tuple[float, float]:
        """Unmeasured placement: linear interpolation over (nodes, replicas, m)
        from all measurements, else the fitted model. Evaluated once per
        (nodes, replicas) on the whole micro-batch range (one vectorized call)."""
        nodes, replicas = min(len(p), 16), sum(p)
        curve = self._cache.get(("curve", nodes, replicas))
        if curve is None:
            lo = self.limits.min_local_bsz
            hi = max(self.limits.max_local_bsz, lo + 1)
            m = (np.arange(lo, hi + 1, dtype=float) if hi - lo <= 256
                 else np.unique(np.geomspace(lo, hi, 256).round()))
            interp = self._interpolator
            if interp is not None:
                pts = np.column_stack([np.full(len(m), nodes), np.full(len(m), replicas), m])
                ys = interp(pts)
            else:
                ys = np.full((len(m), 2), np.nan)
            bad = ~np.all(np.isfinite(ys), axis=1)
            if bad.any():
                ys[bad] = self._model_throughput(len(p), replicas, m[bad])
            curve = (m, ys)
            self._cache[("curve", nodes, replicas)] = curve
        m, ys = curve
        return float(np.interp(micro, m, ys[:, 0])), float(np.interp(micro, m, ys[:, 1]))

    def _model_throughput(self, nodes: int, replicas: int, m: np.ndarray) -> np.ndarray:
        """[step, sync] rows predicted by the fitted model at micro-batches ``m``."""
        perf = self.fitted_perf.as_array()
        n, r = np.full(len(m), float(nodes)), np.full(len(m), float(replicas))
        st = model_step_time(perf, n, r, m, np.zeros(len(m)))
        acc = perf[0] + perf[1] * m
        return np.column_stack([st, np.maximum(st - acc, 0.0)])

    @cached_property
    def measured_efficiency(self) -> MeasuredEfficiency | None:
        """The simulator's efficiency truth from measured runs to target, where
        the profile has them (``world.profiles.efficiency``); None: the formula only."""
        if self.samples_to_target is None or self.target is None:
            return None
        return MeasuredEfficiency(self.samples_to_target, self)

    # ------------------------------------------------------------ validation data
    @cached_property
    def batch_sizes(self) -> np.ndarray:
        return np.array(sorted(self.validation), dtype=float)

    @cached_property
    def _raw_tables(self) -> dict[int, dict[str, np.ndarray]]:
        """Per batch size, the validation columns as arrays; for a target-based
        profile, runs stopped before the target are extrapolated to it."""
        out = {}
        for b in sorted(self.validation):
            df = self.validation[b]
            t = {c: df[c].to_numpy().astype(float) for c in extrapolate.COLUMNS}
            if self.target is not None:
                t = extrapolate.extend(t, extrapolate.rows_to_target(
                    t["progress"], t["metric"], self.target, self.higher_is_better))
            out[b] = t
        return out

    @cached_property
    def extrapolated_rows(self) -> dict[int, int]:
        """Rows per batch size that are extrapolated rather than measured."""
        return {b: len(t["progress"]) - self.validation[b].height
                for b, t in self._raw_tables.items()}

    @cached_property
    def _rows(self) -> int:
        """Epochs common to all batch sizes. Fixed-epoch profiles (AdaptDL) use
        the shortest table, as the reference does; target-based profiles use
        the longest, since a large-batch run may have been stopped early."""
        heights = [len(t["progress"]) for t in self._raw_tables.values()]
        return max(heights) if self.target is not None else min(heights)

    @cached_property
    def num_epochs(self) -> int:
        n = self._rows
        return min(n, self.completion_epochs) if self.completion_epochs else n

    @cached_property
    def _tables(self) -> dict[str, np.ndarray]:
        """Per column, an array [batch_size index, epoch]. A shorter table is
        extended: progress and iterations at its last rate, metric and
        gradient statistics held at their last values."""
        n = self._rows
        out: dict[str, list[np.ndarray]] = {c: [] for c in extrapolate.COLUMNS}
        for t in self._raw_tables.values():
            for col in out:
                v = t[col][:n]
                if len(v) < n:
                    extra = np.arange(1, n - len(v) + 1)
                    if col in ("progress", "iteration"):
                        v = np.concatenate([v, v[-1] + v[-1] / len(v) * extra])
                    else:
                        v = np.concatenate([v, np.full(len(extra), v[-1])])
                out[col].append(v)
        return {c: np.stack(v) for c, v in out.items()}

    @cached_property
    def epoch_progress(self) -> np.ndarray:
        """P(e) for e = 0..num_epochs: progress at which epoch e ends (min over
        batch sizes, as the reference simulator defines it)."""
        p = self._tables["progress"].min(axis=0)[: self.num_epochs]
        return np.concatenate([[0.0], p])

    def _interp(self, col: str, batch_size: float, epoch: int) -> float:
        b = self.batch_sizes
        vals = self._tables[col][:, min(epoch, self._tables[col].shape[1] - 1)]
        return float(np.interp(batch_size, b, vals))

    def grad_stats(self, batch_size: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) a job sees in ``epoch`` at total batch M."""
        key = ("gs", float(batch_size), int(epoch))
        hit = self._cache.get(key)
        if hit is None:
            hit = (self._interp("grad_sqr", batch_size, epoch),
                   self._interp("grad_var", batch_size, epoch))
            self._cache[key] = hit
        return hit

    def grad_stats_grid(self, batch_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(grad_sqr, grad_var) arrays [epoch, batch] over all epochs at once."""
        b = self.batch_sizes
        sqr = np.stack([np.interp(batch_sizes, b, col) for col in self._tables["grad_sqr"].T])
        var = np.stack([np.interp(batch_sizes, b, col) for col in self._tables["grad_var"].T])
        return sqr, var

    def iterations(self, batch_size: float, epoch: int) -> float:
        """Optimizer steps taken by the end of ``epoch`` (0-based row) at batch M."""
        return self._interp("iteration", batch_size, epoch)

    def best_metric(self, batch_size: float, epoch: int) -> float | None:
        """Best validation metric seen in epochs [0, epoch) at batch M."""
        if epoch <= 0:
            return None
        key = ("bm", float(batch_size), int(epoch))  # asked at every epoch of every job
        hit = self._cache.get(key)
        if hit is None:
            t = self._tables["metric"][:, :epoch]
            best = t.max(axis=1) if self.higher_is_better else t.min(axis=1)
            hit = self._cache[key] = float(np.interp(batch_size, self.batch_sizes, best))
        return hit

    def completion_epoch(self, batch_size: float) -> int:
        """Index of the last epoch a job must finish: fixed epoch counts
        (AdaptDL) or the first epoch whose best metric reaches the target."""
        if self.target is None:
            return self.num_epochs - 1
        key = ("ce", float(batch_size))
        hit = self._cache.get(key)
        if hit is None:
            hit = self.num_epochs - 1
            sign = 1.0 if self.higher_is_better else -1.0
            for e in range(1, self.num_epochs + 1):
                best = self.best_metric(batch_size, e)
                if best is not None and sign * (best - self.target) >= 0:
                    hit = e - 1
                    break
            self._cache[key] = hit
        return hit

    def remaining_iterations(self, batch_size: float, epoch: int) -> float:
        """Oracle: optimizer steps left at batch M for a job that has finished
        ``epoch`` epochs, as Optimus+Oracle estimates it in the Pollux study
        (steps at the end of the final epoch minus those at the end of epoch
        index ``epoch``)."""
        final = self.completion_epoch(batch_size)
        return max(self.iterations(batch_size, final) - self.iterations(batch_size, epoch), 0.0)

