"""The policy protocol shared by simulation and live runs.

A policy sees a ``Snapshot``: what a real scheduler could know (time, nodes,
each job's declared limits, its requests, its history, and the goodput model
fitted from the job's own observations). It returns a ``Decision``: slots per
node and batch size for each job. Only a policy that sets ``uses_oracle`` gets
``JobView.oracle`` filled with ground truth, and its name must say so.
"""

from __future__ import annotations

import functools
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

    held: tuple[int, int] | None = field(default=None, repr=False, compare=False)
    """(slots, nodes) of ``allocation`` when whoever built the view knows them
    (the engine does); None: counted from the allocation, which has an entry
    per node (a thousand jobs on a thousand nodes: a million entries a round)."""

    @functools.cached_property
    def replicas(self) -> int:
        """Slots held."""
        return self.held[0] if self.held is not None else sum(self.allocation)

    @functools.cached_property
    def nodes_used(self) -> int:
        """How many nodes the job holds slots on."""
        a = self.allocation
        return self.held[1] if self.held is not None else len(a) - a.count(0)


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
PolicyOptions = tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
"""Per policy name, its option values by key (see ``policies.options``)."""


class Policy(Protocol):
    """What the engine calls. A policy class is built as ``Class(config)``; one
    with options declares them as a class attribute ``Options`` (a frozen
    dataclass, see ``policies.options``) and reads ``config.options_for(self)``."""

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
    options: PolicyOptions = ()
    """Per policy name, the option values set for it (``--policy-arg``, typed and
    checked by ``policies.options``): tuples, so the config stays hashable and
    picklable and reaches every worker as it is."""
    plugins: tuple[str, ...] = ()
    """Specs of the policies loaded from outside the package (``file.py:Class``,
    ``module:Class``): ``make_policy`` loads them where a name is not registered
    (an experiment's worker process, a Ray task)."""

    def __post_init__(self) -> None:
        if not math.isfinite(self.p):
            raise ValueError(f"--p {self.p}: the power-mean exponent must be a finite number "
                             "(e.g. -1 Pollux, -0.5 Sia, 0 the geometric mean, 1 the mean)")

    def given_options(self, name: str) -> dict[str, Any]:
        """The options set for policy ``name`` (only those given), by key."""
        return dict(next((kv for n, kv in self.options if n == name), ()))

    def options_for(self, policy: Any) -> Any:
        """``policy.Options`` with the values set for ``policy.name`` over its
        defaults: how a policy reads its options in its constructor."""
        return policy.Options(**self.given_options(policy.name))


ROLES = ("primary", "variant", "plugin")


@dataclass(frozen=True)
class Entry:
    """A registered policy: how to build it, and what ``coadapt policies`` says of
    it. ``role``: "primary" (one of 'all'), "variant" (runnable by name only) or
    "plugin" (loaded from outside the package, runnable by name once loaded)."""

    name: str
    cls: type
    role: str
    source: str  # built-in: its module; a plugin: its file, or module and distribution
    switches: tuple[tuple[str, Any], ...] | None = None
    """A variant's: ``cls(config, name=name, **switches)``; None: ``cls(config)``."""
    spec: str = ""  # a plugin's canonical spec (what a worker process loads)

    @property
    def uses_oracle(self) -> bool:
        return bool(self.cls.uses_oracle)

    def __call__(self, config: PolicyConfig) -> Policy:
        if self.switches is None:
            return self.cls(config)
        return self.cls(config, name=self.name, **dict(self.switches))


REGISTRY: dict[str, Entry] = {}
PRIMARY: list[str] = []
"""The policies under study, which 'all' runs; the rest of REGISTRY are variants
and plugins."""


def add_entry(entry: Entry) -> None:
    """Make ``entry`` runnable by its name; a name is registered once."""
    if entry.role not in ROLES:
        raise ValueError(f"policy {entry.name!r}: role {entry.role!r} is not one of {ROLES}")
    taken = REGISTRY.get(entry.name)
    if taken is not None:
        raise ValueError(f"policy {entry.name!r} registered twice ({taken.source} and "
                         f"{entry.source})")
    REGISTRY[entry.name] = entry
    if entry.role == "primary":
        PRIMARY.append(entry.name)


def register(cls: type | None = None, *, primary: bool = True):
    """Class decorator: make a policy available by its ``name``; a primary one
    (default) is also one of 'all', a secondary one (``primary=False``, e.g. an
    oracle variant that needs its own class) is listed with the variants."""
    def add(c: type) -> type:
        add_entry(Entry(c.name, c, "primary" if primary else "variant", c.__module__))
        return c
    return add if cls is None else add(cls)


def register_variant(name: str, base: type, **switches: Any) -> None:
    """Register ``name`` as the registered policy class ``base`` built with
    ``switches``: runnable by name, but not one of 'all' (``PRIMARY``)."""
    if base.name not in PRIMARY:
        raise ValueError(f"variant {name!r}: {base.name!r} is not a registered policy")
    add_entry(Entry(name, base, "variant", base.__module__, tuple(sorted(switches.items()))))


def policy_names(*, primary: bool = True, variants: bool = False,
                 oracles: bool = True, plugins: bool = False) -> list[str]:
    """Registered names, sorted: the primary policies, the variants and/or the
    plugins loaded so far, without the oracle baselines unless ``oracles``."""
    roles = {r for r, on in zip(ROLES, (primary, variants, plugins), strict=True) if on}
    return sorted(n for n, e in REGISTRY.items()
                  if e.role in roles and (oracles or not e.uses_oracle))
