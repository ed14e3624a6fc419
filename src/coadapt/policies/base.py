"""The policy protocol shared by simulation and live runs.

A policy sees a ``Snapshot``: what a real scheduler could know (time, nodes,
each job's declared limits, its requests, its history, and the goodput model
fitted from the job's own observations). It returns a ``Decision``: slots per
node and batch size for each job. Only a policy that sets ``uses_oracle`` gets
``JobView.oracle`` filled with ground truth, and its name must say so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from coadapt.models.batching import JobLimits
from coadapt.models.goodput import GoodputModel
from coadapt.world.cluster import Node, NodeSlots


@dataclass(frozen=True)
class Oracle:
    """Ground truth for oracle baselines only (e.g. Optimus+Oracle)."""

    remaining_iterations: Callable[[int], float]  # batch size -> optimizer steps left
    step_time: Callable[[tuple[int, ...], int, int], float]  # placement, micro, accum -> s


@dataclass(frozen=True)
class JobView:
    name: str
    application: str
    submit_time: float
    age: float
    attained_service: float  # slot-seconds held so far
    restarts: int
    allocation: tuple[int, ...]  # slots on each node (len = number of nodes)
    batch_size: int
    requested_replicas: int
    requested_batch: int
    limits: JobLimits  # declared by the job type (the job registry), never measured
    max_observed_replicas: int  # largest replica count the job has run at
    progress: float
    model: GoodputModel | None  # fitted from the job's own observations
    oracle: Oracle | None = None
    weight: float = 1.0  # the job's priority (workload ``weight`` column)
    kind: str | None = None  # the kind of node it runs on now, or ran on last (None: never ran)
    models: Mapping[str, GoodputModel] = field(default_factory=dict)
    """Per kind the job has run on, the model fitted from its observations there
    (``model`` is the one of ``kind``: a kind-unaware policy uses just that)."""
    restoring: bool = False
    """It holds slots but is still (re)starting from its checkpoint, not yet
    stepping (its own report, as Sia's ``scaling_underway``)."""

    @property
    def replicas(self) -> int:
        return sum(self.allocation)


@dataclass(frozen=True)
class Snapshot(NodeSlots):
    """What a policy sees in one round; ``nodes`` are the cluster's, typed (slots
    and kind), in the order of every allocation (``slots_per_node``,
    ``total_slots`` and ``max_slots_per_node`` derive from them)."""

    time: float
    nodes: tuple[Node, ...]
    jobs: tuple[JobView, ...]  # active jobs in submission order
    restart_delay: float
    interval: float
    kind_speed: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Sia's bootstrap, the one thing of the truth a kind-aware policy may know:
    per job type and kind, one worker's samples/s at the type's initial batch,
    as an operator profiles once per job type and kind (empty on one kind)."""
    restart_penalty: Mapping[str, float] = field(default_factory=dict)
    """Per job type, the restart penalty S a policy assumes where a study sets
    one (Sia's per-model S); others: ``restart_delay``."""


@dataclass(frozen=True)
class Assignment:
    """Slots per node and batch; ``adaptive`` lets the job re-tune its batch
    size between rounds with its own goodput model (as AdaptDL agents do)."""

    allocation: tuple[int, ...]
    batch_size: int | None = None
    adaptive: bool = False


Decision = dict[str, Assignment]


class Policy(Protocol):
    name: str  # this instance's registered name (a variant's differs from its class's)
    uses_oracle: ClassVar[bool]

    def decide(self, snap: Snapshot) -> Decision: ...


@dataclass(frozen=True)
class PolicyConfig:
    restart_delay: float = 30.0
    interval: float = 60.0
    p: float = -1.0  # power-mean exponent (Pollux)
    start_node: bool = False
    """A job that has never run may start on up to one node's slots (or its
    request); without it, on one slot, as in the Pollux study. Minute-long CPU
    jobs end before a doubling-per-round growth from one slot gets anywhere."""
    tiresias_threshold: float = 16 * 3600.0  # slot-seconds before demotion (Tiresias)

    def __post_init__(self) -> None:
        if not math.isfinite(self.p):
            raise ValueError(f"--p {self.p}: the power-mean exponent must be a finite number "
                             "(e.g. -1 Pollux, -0.5 Sia, 0 the geometric mean, 1 the mean)")


REGISTRY: dict[str, Callable[[PolicyConfig], Policy]] = {}
PRIMARY: list[str] = []
"""The policies under study, which 'all' runs; the rest of REGISTRY are variants."""


def _claim(name: str) -> None:
    if name in REGISTRY:
        raise ValueError(f"policy {name!r} registered twice")


def register(cls: type | None = None, *, primary: bool = True):
    """Class decorator: make a policy available by its ``name``; a primary one
    (default) is also one of 'all', a secondary one (``primary=False``, e.g. an
    oracle variant that needs its own class) is listed with the variants."""
    def add(c: type) -> type:
        _claim(c.name)
        REGISTRY[c.name] = c
        if primary:
            PRIMARY.append(c.name)
        return c
    return add if cls is None else add(cls)


@dataclass(frozen=True)
class Variant:
    """Factory of a variant (an ablation): ``base(config, name=name, **switches)``."""

    name: str
    base: type
    switches: tuple[tuple[str, Any], ...]

    @property
    def uses_oracle(self) -> bool:
        return self.base.uses_oracle

    def __call__(self, config: PolicyConfig) -> Policy:
        return self.base(config, name=self.name, **dict(self.switches))


def register_variant(name: str, base: type, **switches: Any) -> None:
    """Register ``name`` as the registered policy class ``base`` built with
    ``switches``: runnable by name, but not one of 'all' (``PRIMARY``)."""
    if base.name not in PRIMARY:
        raise ValueError(f"variant {name!r}: {base.name!r} is not a registered policy")
    _claim(name)
    REGISTRY[name] = Variant(name, base, tuple(sorted(switches.items())))


def policy_names(*, primary: bool = True, variants: bool = False,
                 oracles: bool = True) -> list[str]:
    """Registered names, sorted: the primary policies and/or the variants,
    without the oracle baselines unless ``oracles``."""
    return sorted(n for n, f in REGISTRY.items()
                  if (primary if n in PRIMARY else variants) and (oracles or not f.uses_oracle))


def make_policy(name: str, config: PolicyConfig) -> Policy:
    try:
        factory = REGISTRY[name]
    except KeyError:
        known = ", ".join(policy_names(variants=True))
        raise KeyError(f"unknown policy {name!r}; known: {known}") from None
    return factory(config)
