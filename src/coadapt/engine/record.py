"""What the scheduler knows about one job, in sim and live alike.

The record holds the job's request, declared limits, current allocation and
batch, the service it attained and its own observations. A backend (modeled
or live) updates it; the engine turns it into the ``JobView`` a policy sees.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from coadapt.engine.observations import Key, Observations, key
from coadapt.models.batching import JobLimits, split_one
from coadapt.models.goodput import GoodputModel
from coadapt.policies.base import JobView, Oracle
from coadapt.world.cluster import DEFAULT_KIND, as_array
from coadapt.world.workload import JobSpec


@dataclass
class JobRecord:
    spec: JobSpec
    limits: JobLimits
    obs: Observations
    allocation: tuple[int, ...] = ()
    micro: int = 0
    accum: int = 0
    adaptive: bool = False
    progress: float = 0.0
    restarts: int = -1  # the first allocation is a start, not a restart
    attained: float = 0.0
    last_t: float = 0.0
    completed_at: float | None = None
    restoring: bool = False  # the job reports it is (re)starting: not yet stepping (backends set it)
    node_kinds: tuple[str, ...] = ()  # the kind of each node of the cluster (empty: the default)
    kind: str | None = None  # the kind it runs on now, or ran on last; None: never ran
    by_kind: dict[str, Observations] = field(default_factory=dict)
    """Observations per kind it ran on (``obs`` is the current kind's): a job's
    steps on one kind of node say nothing exact about another."""
    _shape: tuple | None = field(default=None, repr=False, compare=False)
    """(allocation, placement, nodes used, replicas), derived once per allocation:
    read at every event, and an allocation has an entry per node."""

    @classmethod
    def new(cls, spec: JobSpec, limits: JobLimits, now: float,
            node_kinds: tuple[str, ...] = ()) -> JobRecord:
        return cls(spec, limits, Observations(limits.init_batch_size), last_t=now,
                   node_kinds=node_kinds)

    @property
    def name(self) -> str:
        return self.spec.name

    def _derived(self) -> tuple:
        shape = self._shape
        if shape is None or shape[0] is not self.allocation:
            a = self.allocation
            used = tuple(np.flatnonzero(as_array(a)).tolist()) if a else ()
            shape = self._shape = (a, tuple(a[i] for i in used), used, sum(a))
        return shape

    @property
    def placement(self) -> tuple[int, ...]:
        """Slots on each node used, without the empty nodes (what the truth prices)."""
        return self._derived()[1]

    @property
    def nodes_used(self) -> tuple[int, ...]:
        """Indices of the nodes the allocation uses, parallel to ``placement``."""
        return self._derived()[2]

    @property
    def replicas(self) -> int:
        return self._derived()[3]

    def release(self) -> None:
        """The job left the schedule: drop what grows with the cluster or its
        steps: its observations' samples, its allocation's per-node entries),
        keep its shape (replicas, nodes used: its batch size is read after it
        finished), models and figures, so that a run of many jobs holds little
        per finished job."""
        shape = self._derived()
        self.allocation = ()
        self._shape = (self.allocation, *shape[1:])  # matches: _derived keeps it
        for o in (self.obs, *self.by_kind.values()):
            o.release()

    @property
    def obs_key(self) -> Key:
        """The observation key of the current allocation and micro-batch."""
        return key(len(self.nodes_used), self.replicas, self.micro)

    @property
    def batch_size(self) -> int:
        return self.replicas * self.micro * (self.accum + 1)

    @property
    def model(self) -> GoodputModel | None:
        return self.obs.model

    def accrue(self, t: float) -> float:
        """Count slot-seconds held up to ``t``; returns the seconds elapsed."""
        dt = t - self.last_t
        if dt <= 0:
            return 0.0
        self.attained += dt * self.replicas
        self.last_t = t
        return dt

    def set_allocation(self, allocation: tuple[int, ...]) -> None:
        """A changed allocation: a (re)start when it has slots, a stop otherwise."""
        self.allocation = allocation
        if self.replicas:
            self.restarts += 1
            self._use_kind(self.node_kinds[self.nodes_used[0]] if self.node_kinds
                           else DEFAULT_KIND)
        else:
            self.micro = self.accum = 0

    def _use_kind(self, kind: str) -> None:
        """Switch the observations (and so the fitted model) to ``kind``'s."""
        if kind == self.kind:
            return
        if self.kind is not None:
            self.by_kind[self.kind] = self.obs
            self.obs = self.by_kind.get(kind) or Observations(self.limits.init_batch_size)
        self.kind = kind

    @property
    def max_observed_replicas(self) -> int:
        """The most replicas it has run at on any kind (what limits its growth,
        as Sia's ``share_max_replicas``; on one kind, its observations')."""
        return max([self.obs.max_observed_replicas,
                    *(o.max_observed_replicas for o in self.by_kind.values())])

    @property
    def models(self) -> dict[str, GoodputModel]:
        """The model fitted on each kind it ran on."""
        obs = {**self.by_kind, **({self.kind: self.obs} if self.kind is not None else {})}
        return {k: o.model for k, o in obs.items() if o.model is not None}

    def choose_batch(self, batch: int | None) -> None:
        """Micro-batch and accumulation for the batch the scheduler chose; with
        none given, an adaptive job takes its own goodput optimum (as an
        AdaptDL agent does between rounds), a fixed one its request."""
        lim, r = self.limits, self.replicas
        if batch is None and self.adaptive and self.model is not None:
            c = self.model.optimize(np.array([len(self.nodes_used)]), np.array([r]), lim)
            self.micro, self.accum = int(c.micro[0]), int(c.accum[0])
            return
        if batch is None:
            batch = int(lim.start_batch(r)) if self.adaptive else \
                self.spec.batch_size
        self.micro, self.accum = split_one(int(batch), r, lim)

    def view(self, now: float, nodes: int, oracle: Oracle | None = None) -> JobView:
        return JobView(
            name=self.name, application=self.spec.application,
            submit_time=self.spec.submit_time, age=now - self.spec.submit_time,
            attained_service=self.attained, restarts=max(self.restarts, 0),
            allocation=self.allocation or _zeros(nodes), batch_size=self.batch_size,
            requested_replicas=self.spec.num_replicas, requested_batch=self.spec.batch_size,
            limits=self.limits, max_observed_replicas=self.max_observed_replicas,
            progress=self.progress, model=self.model, oracle=oracle, weight=self.spec.weight,
            kind=self.kind, models=self.models, restoring=self.restoring and self.replicas > 0,
            held=(self.replicas, len(self.nodes_used)))


@functools.lru_cache(maxsize=8)
def _zeros(nodes: int) -> tuple[int, ...]:
    """The allocation of a job holding nothing (one tuple per cluster size,
    shared by every waiting job's view)."""
    return (0,) * nodes
