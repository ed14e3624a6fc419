"""The simulator's ground truth for a step on a placement, and where it comes from.

A CPU profile measures one machine (here 1 and 2 workers on a 2-core node).
The truth is what was measured wherever it was measured. Across nodes, a
step is the measured compute of the busiest node plus an all-reduce: the
measured loopback all-reduce's per-byte work, scaled to the ring's volume,
and the wire time of the declared network (``data.cluster.Network``); or,
with a network calibration, the all-reduce measured between emulated nodes.
Anything else (more workers on one node than were measured, a profile
without network data) falls back to the profile's own extrapolation. Every
placement is labelled ``measured``, ``network`` or ``extrapolated`` so that
outputs can say which numbers were measured.

This is deliberately a different code path with different inputs from the
Pollux model a policy fits to a job's observations (``engine.observations``):
the policy never sees the network's bandwidth, only steps it ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from coadapt.models.goodput import gain
from coadapt.world.cluster import Network
from coadapt.world.jobtypes import DECLARED_JOB_TYPES
from coadapt.world.profiles.profile import AppProfile, normalize_placement

if TYPE_CHECKING:
    from coadapt.world.profiles.efficiency import MeasuredEfficiency

MEASURED, NETWORK, EXTRAPOLATED = "measured", "network", "extrapolated"


def efficiency_correction(profile: AppProfile, efficiency_truth: str
                          ) -> MeasuredEfficiency | None:
    """The measured runs to target that correct the gain formula under
    ``efficiency_truth == "curves"`` (where the profile has them); None: the
    formula is the truth (e.g. the AdaptDL GPU traces, the reference's semantics)."""
    return profile.measured_efficiency if efficiency_truth == "curves" else None


def true_gain(sqr: np.ndarray | float, var: np.ndarray | float, batch: float, m0: int,
              measured: MeasuredEfficiency | None) -> np.ndarray | float:
    """Progress per step at ``batch`` in the simulator's truth: Pollux's gain
    formula on the profile's gradient statistics, corrected by the measured
    runs to target where ``measured`` has them (None: the formula is the truth)."""
    g = gain(sqr, var, batch / m0)
    return g * measured.factor(batch, m0) if measured is not None else g


def _ring_volume(k: int) -> float:
    return 2.0 * (k - 1) / k if k > 1 else 0.0


class ClusterTruth:
    """Step and all-reduce seconds of one job type on any placement."""

    def __init__(self, profile: AppProfile, network: Network | None = None,
                 grad_bytes: float | None = None) -> None:
        self.profile = profile
        measured = profile.measured_placements()
        self.per_node = max((p[0] for p in measured if len(p) == 1), default=0)
        usable = profile.single_machine and grad_bytes and self.per_node
        self.network = network if usable else None
        self.grad_bytes = float(grad_bytes or 0.0)
        self._measured = set(measured)
        self._cache: dict[tuple[tuple[int, ...], float], tuple[float, float]] = {}

    @classmethod
    def of(cls, app: str, profile: AppProfile, network: Network | None = None) -> ClusterTruth:
        """The truth of job type ``app``: its gradient bytes as declared (``world.jobtypes``;
        a type not declared there, e.g. an imported GPU trace, has none and gets its profile)."""
        job = DECLARED_JOB_TYPES.get(app)
        return cls(profile, network, job.grad_bytes if job is not None else None)

    def kind(self, placement: tuple[int, ...]) -> str:
        p = normalize_placement(placement)
        if p in self._measured:
            return MEASURED
        if self.network is not None and len(p) > 1 and max(p) <= self.per_node:
            return NETWORK
        return EXTRAPOLATED

    def throughput(self, placement: tuple[int, ...], micro: float) -> tuple[float, float]:
        """(step, sync) seconds of one synchronizing step at micro-batch ``micro``."""
        key = (normalize_placement(placement), float(micro))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._throughput(*key)
        return hit

    def _throughput(self, p: tuple[int, ...], m: float) -> tuple[float, float]:
        if self.kind(p) != NETWORK:
            return self.profile.throughput(p, m)
        assert self.network is not None
        k, busiest = sum(p), max(p)
        step, sync = self.profile.throughput((busiest,), m)
        compute = step - sync
        loop = 0.0
        # the per-byte work gloo did on one machine, at the ring's volume (a measured
        # network's fit holds it already)
        if self.per_node >= 2 and not self.network.measured:
            loop = self.profile.throughput((2,), m)[1] * _ring_volume(k) / _ring_volume(2)
        allreduce = loop + self.network.allreduce(self.grad_bytes, k)
        return compute + allreduce, allreduce


class StepTruth(Protocol):
    """What the simulator asks of a truth: a step's seconds on a placement, and
    where that number comes from (``measured``, ``network``, ``extrapolated``)."""

    def throughput(self, placement: tuple[int, ...], micro: float) -> tuple[float, float]: ...

    def kind(self, placement: tuple[int, ...]) -> str: ...


@dataclass(frozen=True)
class ScaledTruth:
    """A CPU node kind's truth: the plain truth with its compute and all-reduce
    scaled by the kind's measured factors (``world.kinds.KindSpeeds``)."""

    base: ClusterTruth
    compute: float
    sync: float

    def throughput(self, placement: tuple[int, ...], micro: float) -> tuple[float, float]:
        step, sync = self.base.throughput(placement, micro)
        return (step - sync) * self.compute + sync * self.sync, sync * self.sync

    def kind(self, placement: tuple[int, ...]) -> str:
        return self.base.kind(placement)
