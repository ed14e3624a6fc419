"""Finish-time fairness yardstick T_iso: one number per job, the same for every policy.

Themis's finish-time fairness is rho_j = JCT_j / T_iso_j, with T_iso_j the
time job j would take had it 1/N_j of the cluster to itself. Here:

- **The share** is ``fair_share(slots, N)`` = max(1, floor(slots / N)) slots,
  packed onto nodes of the cluster's size. The one definition of a fair share
  in the project.
- **Used as well as it can be**: the job's best *static* configuration within
  that share, by the simulator's truth (measured step times, the network
  model across nodes, the efficiency truth): the worker count k <= share and
  batch size M (within the job type's limits) that reach the target soonest.
  Its T_iso is the wait for the first scheduling round (every run pays it),
  the measured start, that configuration's training time, a validation pause
  per epoch, the final validation and the fresh-process verification.
- **N_j** is the time-averaged number of jobs in the system during j's life
  *in the yardstick's own schedule*, where every job k is present from its
  submission for T_iso_k. That is a fixed point (N depends on the T_iso's,
  which depend on N); it is found by iterating from N = 1: a larger N only
  shrinks shares and lengthens T_iso's, so N only grows and the iteration
  stops when no share changes. Why not N from the run being measured (the
  earlier definition): it depends on the policy, so a policy that keeps more
  jobs waiting would enlarge its own N, lengthen its own T_iso and flatter
  its own rho, and no two policies' rho could be compared.

The yardstick depends only on (workload, cluster, profiles, measured costs,
round length), never on the policy or on what a run did: every policy of a
run, and every policy of an experiment cell's (set, seed, network), is
measured against the same table. A job alone on an empty cluster that a
policy runs at its best static configuration from its first round scores
rho = 1; a policy that explores (starts small, grows) scores above 1 alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from coadapt.eventlog import EventLog
from coadapt.runs.settings import RunSettings
from coadapt.world.workload import JobSpec, Workload
from coadapt.world.world import World

MAX_ROUNDS = 100  # fixed-point iterations; it settles in a handful
BATCH_GRID = 24  # candidate batch sizes per job type, log-spaced over its limits


def fair_share(slots: int, n_jobs: float) -> int:
    """The equal share of ``slots`` among ``n_jobs`` (time-averaged) jobs."""
    return max(1, int(slots // max(n_jobs, 1.0)))


@dataclass(frozen=True)
class Best:
    """A job type's best static configuration within a share, and its time."""

    replicas: int
    batch: int
    seconds: float  # from the first round to completion (start, training, pauses, verify)


@dataclass
class Yardstick:
    """T_iso for the jobs of one workload in one world (see the module docstring)."""

    world: World
    interval: float
    restart_delay: float

    def __post_init__(self) -> None:
        self._best: dict[tuple[str, int], Best] = {}
        self._per_k: dict[tuple[str, str, int], Best | None] = {}

    def _overheads(self, app: str, k: int, epochs: int) -> float:
        """Start, validation pauses, final validation and verification at k workers."""
        c = self.world.costs
        if c is None:
            return self.restart_delay
        return c.launch(app, k) + epochs * c.eval(app, k) + c.finish(app)

    def best(self, app: str, share: int) -> Best:
        """The fastest static (workers <= share, batch) for ``app``: the best of
        the per-(kind, workers) bests, each computed once (a workload's jobs
        ask for many shares; the configurations behind them are the same)."""
        key = (app, share)
        hit = self._best.get(key)
        if hit is not None:
            return hit
        lim, cluster = self.world.limits[app], self.world.cluster
        best: Best | None = None
        # alone, a job would run on its best kind (one kind at a time)
        for kind in cluster.kinds:
            top = max(1, min(share, lim.max_replicas, cluster.slots_of_kind(kind)))
            for k in range(1, top + 1):
                at = self._at(app, kind, k)
                if at is not None and (best is None or at.seconds < best.seconds):
                    best = at
        if best is None:
            raise ValueError(f"{app}: no configuration within {share} slot(s) fits its limits")
        self._best[key] = best
        return best

    def _at(self, app: str, kind: str, k: int) -> Best | None:
        """The fastest batch for ``app`` on ``k`` workers of ``kind`` (None: none fits)."""
        key = (app, kind, k)
        if key in self._per_k:
            return self._per_k[key]
        lim, prof = self.world.limits[app], self.world.profiles[app]
        grid = np.unique(np.round(np.geomspace(lim.init_batch_size, lim.max_batch_size,
                                               BATCH_GRID)).astype(int))
        secs, run = self.world.train_seconds(app, k, grid, kind=kind)
        best: Best | None = None
        for i in np.argsort(secs)[:3]:  # the overheads differ little by batch
            if not np.isfinite(secs[i]):
                continue
            m = int(run[i])
            epochs = prof.completion_epoch(float(m)) + 1
            t = float(secs[i]) + self._overheads(app, k, epochs)
            if best is None or t < best.seconds:
                best = Best(k, m, t)
        self._per_k[key] = best
        return best

    # ----------------------------------------------------------- the workload
    def first_round_wait(self, submit: float) -> float:
        return self.interval * math.floor(submit / self.interval + 1.0) - submit

    def table(self, jobs: tuple[JobSpec, ...] | list[JobSpec]) -> dict[str, dict[str, float]]:
        """Per job: share, n, t_iso (seconds), and the configuration behind it."""
        slots = self.world.cluster.total_slots
        arrive = np.array([j.submit_time for j in jobs], dtype=float)
        shares = np.full(len(jobs), slots)
        for _ in range(MAX_ROUNDS):
            t_iso = np.array([self.first_round_wait(j.submit_time)
                              + self.best(j.application, int(s)).seconds
                              for j, s in zip(jobs, shares, strict=True)])
            n = _mean_overlap(arrive, arrive + t_iso)
            new = np.array([fair_share(slots, x) for x in n])
            if np.array_equal(new, shares):
                break
            shares = np.minimum(new, shares)  # monotone: N only grows
        out = {}
        for j, s, t, x in zip(jobs, shares, t_iso, n, strict=True):
            b = self.best(j.application, int(s))
            out[j.name] = {"share": int(s), "n": float(x), "t_iso": float(t),
                           "replicas": b.replicas, "batch": b.batch}
        return out


def _mean_overlap(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per interval i: the time-averaged number of intervals (itself included)
    covering a point of [start_i, end_i]. A sweep over the sorted end points:
    the covering count is a step function whose integral F is piecewise
    linear, and interval i covers F(end_i) - F(start_i); O(n log n) time and
    O(n) memory, so a trace of 80,000 jobs needs no n x n matrix."""
    points = np.concatenate([start, end])
    steps = np.concatenate([np.ones(len(start)), -np.ones(len(end))])
    order = np.argsort(points, kind="stable")
    t, count = points[order], np.cumsum(steps[order])  # count just after each point
    area = np.concatenate([[0.0], np.cumsum(count[:-1] * np.diff(t))])  # F at each point

    def integral(x: np.ndarray) -> np.ndarray:
        i = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 1)
        return area[i] + count[i] * (x - t[i])

    covered = integral(end) - integral(start)
    return covered / np.maximum(end - start, 1e-9)


def yardstick_for(settings: RunSettings, world: World) -> Yardstick:
    """The yardstick of a run: its world (cluster, the truth its jobs follow,
    costs, efficiency truth) and round, nothing of its policy."""
    return Yardstick(world, settings.interval, settings.restart_delay)


def append_fairness(log: EventLog, now: float, workload: Workload, yardstick: Yardstick,
                    completed: set[str] | None = None) -> None:
    """A ``fairness`` event per job (per completed job, when given): the shared T_iso."""
    for name, f in yardstick.table(workload.jobs).items():
        if completed is None or name in completed:
            log.emit(now, "fairness", name, share=f["share"], n_avg=f["n"], t_iso=f["t_iso"],
                     iso_replicas=f["replicas"], iso_batch=f["batch"], yardstick="shared")
