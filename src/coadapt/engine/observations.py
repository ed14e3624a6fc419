"""A job's own observations -> fitted throughput model -> goodput model.

An AdaptDL agent keeps the step and all-reduce times it measured per
configuration (nodes, replicas, micro-batch) and its gradient statistics, and
fits the Pollux throughput model to them. The policy sees that fitted model,
never the profile. A modeled job reports one exact value per configuration; a
live job reports every step, noisy, so each configuration keeps a window of
recent samples and the fit uses their median.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from coadapt.models.goodput import (
    GoodputModel,
    GradParams,
    PerfParams,
    fit_perf_params,
    predicts_well,
)

Key = tuple[int, int, int]  # (nodes, replicas, micro-batch)


def key(nodes: int, replicas: int, micro: int) -> Key:
    """The one observation key: a configuration is (nodes, replicas, micro-batch)."""
    return (int(nodes), int(replicas), int(micro))


def _median(values: list[float]) -> float:
    """np.median's value (the mean of the middle two for an even count), without
    its overhead: a job records a step at every boundary."""
    v = sorted(values)
    mid = len(v) // 2
    return float(v[mid]) if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


@dataclass
class Observations:
    """Samples per configuration, the fitted model and when to refit it.

    A refit is due when a configuration is new or its median moved by more
    than ``tolerance`` since the last fit, and the model mispredicts it; fits
    happen at most every ``refit_interval`` seconds, as an agent refits
    periodically rather than per step.
    """

    init_batch_size: int
    refit_interval: float = 30.0
    tolerance: float = 0.05
    window: int = 32
    model: GoodputModel | None = None
    max_observed_replicas: int = 0
    _samples: dict[Key, deque[tuple[float, float]]] = field(default_factory=dict)
    _checked: dict[Key, tuple[float, float]] = field(default_factory=dict)
    _perf: PerfParams | None = None
    _grad: GradParams | None = None
    _stale: bool = False
    _fit_at: float = -np.inf
    _released: tuple[Key, ...] = ()  # configurations whose samples a release dropped

    @property
    def grad(self) -> GradParams | None:
        return self._grad

    @property
    def configurations(self) -> list[Key]:
        """Every configuration it ran at, before and after a release."""
        return list(self._samples) + [k for k in self._released if k not in self._samples]

    def value(self, key: Key) -> tuple[float, float]:
        """Median (step, sync) of the samples kept for ``key``."""
        q = self._samples[key]
        if len(q) == 1:
            return float(q[0][0]), float(q[0][1])
        return _median([s for s, _ in q]), _median([s for _, s in q])

    def record(self, key: Key, step: float, sync: float) -> None:
        """One measured synchronizing step (no accumulation) at ``key``."""
        q = self._samples.get(key)
        if q is None:
            q = self._samples[key] = deque(maxlen=self.window)
            self.max_observed_replicas = max(self.max_observed_replicas, key[1])
        q.append((float(step), float(sync)))
        cur = self.value(key)
        seen = self._checked.get(key)
        if seen is not None and abs(cur[0] / seen[0] - 1) <= self.tolerance \
                and abs((cur[0] - cur[1]) / max(seen[0] - seen[1], 1e-12) - 1) <= self.tolerance:
            return
        self._checked[key] = cur
        if self._perf is None or not predicts_well(self._perf, *key, *cur, tol=self.tolerance):
            self._stale = True

    def release(self) -> None:
        """Forget the samples (the job finished); the configurations it ran at
        and the fitted model stay."""
        self._released = tuple(self.configurations)
        self._samples = {}  # a late report after the release starts a fresh queue
        self._checked.clear()
        self._stale = False

    def set_grad(self, sqr: float, var: float) -> bool:
        """New gradient statistics; True when they changed the model."""
        if self._grad is not None and (self._grad.sqr, self._grad.var) == (sqr, var):
            return False
        self._grad = GradParams(float(sqr), float(var))
        self._rebuild()
        return True

    def refit(self, t: float) -> bool:
        """Refit the throughput model if it is stale and a refit is due."""
        if not self._stale or (self._perf is not None and t - self._fit_at < self.refit_interval):
            return False
        rows = np.array([(*k, *self.value(k)) for k in self._samples], dtype=float)
        self._perf = fit_perf_params(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], rows[:, 4],
                                     init=self._perf)
        self._stale, self._fit_at = False, t
        self._rebuild()
        return True

    def _rebuild(self) -> None:
        if self._perf is not None and self._grad is not None:
            self.model = GoodputModel(self._perf, self._grad, self.init_batch_size)
