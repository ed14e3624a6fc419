"""Sia (Jayaram Subramanya et al., SOSP 2023): goodput scheduling over kinds.

Pollux adapts each job's slots and batch on one kind of node; Sia does it on
a cluster of several kinds, as an integer program over configurations
(kind, nodes, slots), the way the study's artifact (``sia-simulator/sia.py``)
runs it:

- **configurations** of a kind: 1, 2, 4, 8, ... slots within one node (up to
  a node's slots, the whole node included), and n whole nodes for n >= 2; a
  job may take those within its declared limits and at most twice what it has
  run at (one slot, or ``start_node``'s share, to start), on any kind;
- **lock**: a job that reports it is still restoring its checkpoint after a
  change (``JobView.restoring``) keeps its configuration this round: its one
  candidate is forced into the solution, as the artifact's constraint
  X[job, current] == 1 (a mere preference would let a job that values the
  slots more take them, and a restoring job would start and stop forever);
- **value**: the job's goodput there (``kind_estimates``: its own model on a
  kind it ran on, projected by the bootstrap ratio elsewhere, the bootstrap
  alone before its first step, or as the artifact by default, value 1 on one
  slot of every kind: ``bootstrap_new``), the row normalized by its smallest
  non-zero entry, and every configuration but the current one multiplied by the
  restart factor max(age - restarts*S, 0)/(age + S) (S = the restart delay;
  1 for a job younger than S or not running now, as in the artifact);
- **objective**: minimize sum over chosen (job, configuration) of
  weight * min(round(value^p, 2), 3000) plus ``lambda_n`` for each job left
  without one (p = -0.5, lambda_n = 1.1 > 1, so any configuration beats none);
  at most one configuration per job, the slots of each kind within its
  capacity; solved exactly with ``scipy.optimize.milp`` (HiGHS) where the
  artifact used CBC.

Then a ``ConfigPlacer`` puts the chosen configurations on nodes (default
``WholeNodes``; a job it cannot place waits this round), and each job runs the
goodput-optimal batch of its allocation, re-tuned between rounds (adaptive).

Departures from the artifact: no rigid (fixed-size) job class; an unseen kind
is projected from the job's current kind (the artifact: the first seen type in
cluster order) at the target kind's node shape (the artifact re-packs the
slots onto the seen type's nodes); the projection ratio is the bootstrap's, at
the initial batch (the artifact: its profiles' largest one-GPU batch);
placement keeps unchanged configurations where they are (the artifact's
simulated placement does not).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.optimize
import scipy.sparse

from coadapt.policies.base import (
    Assignment,
    Decision,
    JobView,
    PolicyConfig,
    Snapshot,
    register,
)
from coadapt.policies.estimates import growth_cap, start_slots
from coadapt.policies.kind_estimates import (
    best_batch_on,
    goodput_on_kinds,
    job_speeds,
    on_kind,
)
from coadapt.policies.kind_placement import (
    Config,
    ConfigPlacer,
    WholeNodes,
    config_of,
    place_jobs,
)
from coadapt.policies.options import apply_options, with_options
from coadapt.world.cluster import Node

EXACT_JOBS = 1024
"""Jobs in a round up to which the ILP is solved whole (HiGHS: about 0.3 s at
a thousand jobs on 2,048 slots); beyond, POP's partition."""


def kind_configs(nodes: tuple[Node, ...]) -> list[Config]:
    """Sia's configurations on the nodes of one kind: 1, 2, 4, ... slots up to
    a whole node on one node, then 2, 3, ... whole nodes (the largest ones);
    in ascending order of slots."""
    if not nodes:
        return []
    kind = nodes[0].kind
    per = max(n.slots for n in nodes)
    single = {per} | {1 << i for i in range(per.bit_length()) if 1 << i <= per}
    out = [Config(kind, 1, s) for s in sorted(single)]
    whole = np.cumsum(sorted((n.slots for n in nodes), reverse=True))
    out += [Config(kind, k, int(whole[k - 1])) for k in range(2, len(nodes) + 1)]
    return out


def restore_lock(job: JobView) -> bool:
    """Whether the job keeps its configuration this round: it holds slots and
    reports it is still restoring its checkpoint (the one test both the
    candidates and the ILP's bound use, so they cannot disagree)."""
    return job.restoring and job.replicas > 0


def restart_factor(job: JobView, delay: float) -> float:
    """Pollux's discount on a change of configuration; 1 for a job that is not
    running or younger than one restart (the artifact's rule: no penalty
    before it could have scaled even once)."""
    if job.replicas == 0 or job.age < delay or job.age + delay <= 0:
        return 1.0
    return max(job.age - job.restarts * delay, 0.0) / (job.age + delay)


@register
@with_options(
    p="power on normalized goodput (Sia's fairness knob); must be < 0",
    lambda_n="cost of leaving a job without a configuration; must be > 1",
    clip="cap on value^p (the artifact's sia_goodput_clip_val)",
    bootstrap_new="value a job with no model yet by the bootstrap on every kind (false: the "
    "artifact's default, one slot of every kind, all of value 1)")
@dataclass
class Sia:
    config: PolicyConfig
    p: float = -0.5  # power on normalized goodput (Sia's fairness knob); must be < 0
    lambda_n: float = 1.1  # cost of leaving a job without a configuration; > 1
    clip: float = 3000.0  # cap on value^p (the artifact's sia_goodput_clip_val)
    bootstrap_new: bool = True
    """A job with no model yet is valued by the bootstrap on every kind (one
    worker's speed there, ``kind_estimates``), so it starts on the kind that is
    faster for its type, as the Sia paper profiles a new job. False reproduces
    the artifact's default (``sia_read_throughputs_before_first_run=False``):
    one slot of every kind, all of value 1."""
    name: str = "sia"
    placer: ConfigPlacer = field(default_factory=WholeNodes)
    exact_jobs: int = EXACT_JOBS  # jobs a round solves whole; beyond, POP (see ``solve``)
    uses_oracle: ClassVar[bool] = False

    def __post_init__(self) -> None:
        apply_options(self)
        if not self.p < 0 or self.lambda_n <= 1:
            raise ValueError(f"sia: p={self.p}, lambda_n={self.lambda_n}: Sia minimizes "
                             "goodput^p with p < 0 and lambda_n > 1 (any configuration "
                             "must beat none)")

    def candidates(self, snap: Snapshot, job: JobView,
                   menus: dict[str, list[Config]] | None = None
                   ) -> tuple[list[Config], np.ndarray]:
        """The job's valid configurations and their values (normalized goodput,
        restart factor applied); configurations worth nothing are dropped.
        ``menus``: each kind's configurations (``kind_configs``), computed once
        per round by ``decide``."""
        if menus is None:
            menus = {k: kind_configs(snap.of_kind(k)) for k in snap.kinds}
        cap = growth_cap(job, snap.total_slots,
                         start_slots(job, snap.max_slots_per_node, self.config.start_node))
        current = config_of(job.allocation, snap.nodes) if job.replicas else None
        if current is not None and restore_lock(job):
            return [current], np.ones(1)  # restoring its checkpoint: it keeps what it has
        speeds = job_speeds(snap, job)
        if not self.bootstrap_new and all(on_kind(job, k, speeds).model is None
                                          for k in snap.kinds):
            blind = [Config(k, 1, 1) for k in snap.kinds]
            return blind, np.ones(len(blind))
        configs: list[Config] = []
        ests, shapes = [], []
        for kind in snap.kinds:
            menu = menus[kind]  # ascending in slots: those within the cap are a prefix
            mine = menu[: bisect.bisect_right(menu, cap, key=lambda c: c.slots)]
            if current is not None and current.kind == kind and current not in mine:
                mine.append(current)  # it may always keep what it has
            if not mine:
                continue
            configs += mine
            ests.append(on_kind(job, kind, speeds))
            shapes.append(mine)
        values = goodput_on_kinds(job, ests, [np.array([c.nodes for c in m]) for m in shapes],
                                  [np.array([c.slots for c in m]) for m in shapes])
        value = np.concatenate(values) if values else np.zeros(0)
        keep = np.isfinite(value) & (value > 0)
        configs = [c for c, k in zip(configs, keep, strict=True) if k]
        value = value[keep]
        if not len(value):
            return [], value
        value = value / value.min()
        factor = restart_factor(job, snap.restart_penalty.get(job.application, snap.restart_delay))
        moved = np.array([c != current for c in configs])
        return configs, np.where(moved, value * factor, value)

    def cost(self, value: np.ndarray) -> np.ndarray:
        """value^p rounded to 0.01 and clipped, as the artifact powers its matrix."""
        with np.errstate(divide="ignore"):
            powered = np.power(np.maximum(value, 0.0), self.p)
        return np.minimum(np.round(powered, 2), self.clip)

    def solve(self, snap: Snapshot, rows: list[tuple[list[Config], np.ndarray]]
              ) -> list[Config | None]:
        """The ILP (``_ilp``) over the round's jobs; above ``exact_jobs`` jobs
        partitioned as POP does (as ``solve.partitioned_allocation`` for
        Pollux): a job locked to its configuration keeps it, the others are
        dealt at random into k groups of at most ``exact_jobs``, each solved on
        1/k of every kind's slots left."""
        capacity = {k: snap.slots_of_kind(k) for k in snap.kinds}
        if len(rows) <= self.exact_jobs:
            return self._ilp(rows, snap.jobs, capacity)
        chosen: list[Config | None] = [None] * len(rows)
        free: list[int] = []
        for i, ((configs, _), job) in enumerate(zip(rows, snap.jobs, strict=True)):
            if restore_lock(job) and len(configs) == 1:
                chosen[i] = configs[0]
                capacity[configs[0].kind] -= configs[0].slots
            else:
                free.append(i)
        k = -(-len(free) // self.exact_jobs)
        groups = np.random.default_rng(0).permutation(len(free)) % k
        for g in range(k):
            members = [free[i] for i in np.flatnonzero(groups == g)]
            share = {kind: max(c, 0) // k + (g < max(c, 0) % k) for kind, c in capacity.items()}
            picked = self._ilp([rows[i] for i in members], [snap.jobs[i] for i in members], share)
            for i, cfg in zip(members, picked, strict=True):
                chosen[i] = cfg
        return chosen

    def _ilp(self, rows: list[tuple[list[Config], np.ndarray]], jobs_of: Sequence[JobView],
             capacity: dict[str, int]) -> list[Config | None]:
        """One binary per (job, configuration); minimize the summed costs minus
        lambda_n per configuration chosen (the constant lambda_n * jobs
        dropped); per job at most one; per kind slots within ``capacity``."""
        kinds = list(capacity)
        owner, cost, slots, kind_idx, lower = [], [], [], [], []
        for j, ((configs, value), job) in enumerate(zip(rows, jobs_of, strict=True)):
            c = job.weight * self.cost(value) - self.lambda_n
            locked = float(restore_lock(job) and len(configs) == 1)  # X[job, current] == 1
            for cfg, cj in zip(configs, c, strict=True):
                owner.append(j)
                cost.append(cj)
                slots.append(cfg.slots)
                kind_idx.append(kinds.index(cfg.kind))
                lower.append(locked)
        chosen: list[Config | None] = [None] * len(rows)
        if not cost:
            return chosen
        n, jobs = len(cost), len(rows)
        cols = np.arange(n)
        a = scipy.sparse.vstack([
            scipy.sparse.csr_array((np.ones(n), (owner, cols)), shape=(jobs, n)),
            scipy.sparse.csr_array((np.array(slots, dtype=float), (kind_idx, cols)),
                                   shape=(len(kinds), n)),
        ])
        upper = np.concatenate([np.ones(jobs), [capacity[k] for k in kinds]])
        res = scipy.optimize.milp(
            np.array(cost), integrality=np.ones(n),
            bounds=scipy.optimize.Bounds(np.array(lower), 1),
            constraints=scipy.optimize.LinearConstraint(a, -np.inf, upper))
        if res.x is None:
            raise RuntimeError(f"sia: the ILP found no solution ({res.message})")
        flat = [cfg for configs, _ in rows for cfg in configs]
        for i in np.flatnonzero(res.x > 0.5):
            chosen[owner[i]] = flat[i]
        return chosen

    def decide(self, snap: Snapshot) -> Decision:
        if not snap.jobs:
            return {}
        menus = {k: kind_configs(snap.of_kind(k)) for k in snap.kinds}
        rows = [self.candidates(snap, job, menus) for job in snap.jobs]
        chosen = self.solve(snap, rows)
        configs = {job.name: cfg for job, cfg in zip(snap.jobs, chosen, strict=True)
                   if cfg is not None}
        out: Decision = {}
        for job, alloc, cfg in place_jobs(self.placer, configs, snap):
            est = on_kind(job, cfg.kind, job_speeds(snap, job))
            used = sum(1 for a in alloc if a)
            out[job.name] = Assignment(alloc, best_batch_on(job, est, used, cfg.slots),
                                       adaptive=True)
        return out

