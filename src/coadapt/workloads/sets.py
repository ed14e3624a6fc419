"""Named CPU workload sets, generated reproducibly from a seed.

Each set is philly-small's recipe (the Makefile's ``philly-small``: 30 jobs
over 30 min, classes small=60 % / medium=25 % / large=15 %, small = the
MNIST-1D MLP or CNN, medium = the transformer, large = the LSTM) at another
arrival rate or with other requests:

* ``cpu-load1`` .. ``cpu-load8``: 1x to 8x philly-small's arrival rate;
* ``cpu-burst``: 40 jobs within 3 min;
* ``cpu-user``: 2x load with user-chosen, untuned requests (often oversized);
* ``cpu-priority``: cpu-load8 with 20% of the jobs at weight 4 (priorities).

Tuned requests are priced at the simulator's truth on the cluster given to
``make_workload`` (``generate.configurations``), so another network
re-tunes them. ``coadapt workload sets`` writes every set to ``traces/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from coadapt.workloads.generate import generate, parametric_arrivals
from coadapt.world.workload import JobSpec, Workload
from coadapt.world.world import World

# philly-small, the reference every set's load is relative to.
BASE_JOBS = 30
BASE_WINDOW_S = 1800.0
BASE_MIX: Mapping[str, float] = MappingProxyType({"small": 0.6, "medium": 0.25, "large": 0.15})
CPU_CLASSES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "small": ("mlp-mnist1d", "cnn-mnist1d"), "medium": ("transformer-text",),
    "large": ("lstm-text",), "xlarge": ("lstm-text",)})
USER_MAX_WORKERS = 8
# Requests come from their own random stream, (seed, REQUEST_STREAM): the same seed
# on another cluster or network keeps its arrivals and job types.
REQUEST_STREAM = 1
PRIORITY_STREAM = 2  # and which jobs are high-priority: a third stream, so cpu-priority
# is cpu-load2 with weights, job for job


@dataclass(frozen=True)
class WorkloadSet:
    """A recipe for a workload: how many jobs arrive over which window, the
    class mix and job types, and whether requests are tuned or user-chosen."""

    name: str
    description: str
    jobs: int
    window_s: float
    mix: Mapping[str, float] = field(default_factory=lambda: BASE_MIX, hash=False)
    classes: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: CPU_CLASSES,
                                                   hash=False)
    user_chosen: bool = False
    max_user_workers: int = USER_MAX_WORKERS
    priority_share: float = 0.0  # this share of the jobs (drawn at random) is high-priority
    priority_weight: float = 4.0  # ... with this weight (the rest: 1)

    def __post_init__(self) -> None:
        if self.jobs < 1 or not self.window_s > 0:
            raise ValueError(f"workload set {self.name!r}: needs >= 1 job and a window > 0 s")
        object.__setattr__(self, "mix", MappingProxyType(dict(self.mix)))
        object.__setattr__(self, "classes", MappingProxyType(dict(self.classes)))

    @property
    def load(self) -> float:
        """Arrival rate relative to philly-small's (30 jobs in 30 min)."""
        return (self.jobs / self.window_s) / (BASE_JOBS / BASE_WINDOW_S)


def _load_set(factor: int) -> WorkloadSet:
    return WorkloadSet(
        f"cpu-load{factor}",
        f"{factor}x philly-small's arrival rate ({BASE_JOBS * factor} jobs in 30 min), "
        "tuned requests",
        BASE_JOBS * factor, BASE_WINDOW_S)


SETS: dict[str, WorkloadSet] = {s.name: s for s in (
    *(_load_set(f) for f in (1, 2, 4, 8)),
    WorkloadSet("cpu-burst", "40 jobs within 3 min, tuned requests: a queue to drain",
                40, 180.0),
    # Contended on purpose: at 2x load jobs seldom wait on 8x2, so weights change little.
    WorkloadSet("cpu-priority", "cpu-load8 (the same arrivals, job types and requests) "
                "with 20% of the jobs high-priority (weight 4)", BASE_JOBS * 8, BASE_WINDOW_S,
                priority_share=0.2),
    WorkloadSet("cpu-user", "2x load (60 jobs in 30 min) with user-chosen requests: 1-8 "
                "workers and any validated batch they can run, not tuned (often oversized)",
                60, BASE_WINDOW_S, user_chosen=True),
)}


def get_set(name: str) -> WorkloadSet:
    """The named set; ValueError lists the known ones."""
    try:
        return SETS[name]
    except KeyError:
        raise ValueError(f"unknown workload set {name!r}; known: {', '.join(SETS)}") from None


def make_workload(workload_set: str | WorkloadSet, seed: int, world: World) -> Workload:
    """Generate the set in memory for ``seed``: parametric arrivals and job types
    from ``default_rng(seed)``, and requests tuned on the world's cluster (or
    user-chosen within it) from their own stream, so the same seed on another
    cluster differs in its requests only. The result has no path."""
    ws = get_set(workload_set) if isinstance(workload_set, str) else workload_set
    rng = np.random.default_rng(seed)  # arrivals and job types
    requests = np.random.default_rng((seed, REQUEST_STREAM))
    arrivals = parametric_arrivals(ws.jobs, ws.window_s, dict(ws.mix), rng)
    rows = generate(arrivals, ws.jobs, world, ws.classes, rng, tuned=not ws.user_chosen,
                    user_max_workers=ws.max_user_workers, request_rng=requests)
    weights = np.ones(len(rows))
    if ws.priority_share > 0:
        pick = np.random.default_rng((seed, PRIORITY_STREAM)).permutation(len(rows))
        weights[pick[: round(ws.priority_share * len(rows))]] = ws.priority_weight
    jobs = tuple(JobSpec(name, float(t), app, r, b, line=i + 2, weight=float(weights[i]))
                 for i, (name, t, app, r, b) in enumerate(rows))
    return Workload(name=ws.name, path=None, jobs=jobs)  # type: ignore[arg-type]
