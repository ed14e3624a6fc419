"""A modeled training job: advances by its profile, reports what it observes.

Progress (iterations at M0) accrues at rate r(S) / T_step while the job holds
slots and is past its restart delay; the rate is constant between events
(allocation changes, restarts ending, epoch boundaries), so the engine can
jump from event to event. The job keeps its own record of the configurations
it ran and fits its throughput model from them, as an AdaptDL agent would;
that fitted model, not the profile, is what the policy sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from coadapt.models.goodput import (
    GoodputModel,
    GradParams,
    PerfParams,
    fit_perf_params,
    gain,
    predicts_well,
)
from coadapt.profiling.profile import AppProfile
from coadapt.workloads.workload import JobSpec


@dataclass
class SimJob:
    spec: JobSpec
    profile: AppProfile
    max_replicas: int
    allocation: tuple[int, ...] = ()
    micro: int = 0
    accum: int = 0
    adaptive: bool = False
    progress: float = 0.0
    epoch: int = 0
    restarts: int = -1  # the first allocation is a start, not a restart
    run_from: float = 0.0
    last_t: float = 0.0
    attained: float = 0.0
    rate: float = 0.0
    completed_at: float | None = None
    version: int = 0
    model: GoodputModel | None = None
    max_observed_replicas: int = 0
    _observed: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    _perf: PerfParams | None = None
    _grad: GradParams | None = None
    _stale: bool = False  # observations the fitted model does not explain yet
    _fit_at: float = -np.inf

    # An AdaptDL agent refits its throughput model periodically, not per step,
    # and only observations the model mispredicts by > 5% make it stale.
    REFIT_INTERVAL = 30.0
    REFIT_TOLERANCE = 0.05

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def placement(self) -> tuple[int, ...]:
        return tuple(a for a in self.allocation if a)

    @property
    def replicas(self) -> int:
        return sum(self.allocation)

    @property
    def batch_size(self) -> int:
        return self.replicas * self.micro * (self.accum + 1)

    def advance(self, t: float) -> None:
        """Accrue service and progress up to time t (no event lies in between)."""
        if t <= self.last_t:
            return
        r = self.replicas
        if r:
            self.attained += (t - self.last_t) * r
            running = t - max(self.last_t, self.run_from)
            if running > 0:
                self.progress += self.rate * running
        self.last_t = t

    # ----------------------------------------------------------------- truth
    def true_rates(self) -> tuple[float, float, float, float, float]:
        """(step, sync, throughput, efficiency, progress rate) from the profile."""
        step, sync = self.profile.throughput(self.placement, self.micro)
        total = step + self.accum * (step - sync)
        batch = self.batch_size
        sqr, var = self.profile.grad_stats(batch, self.epoch)
        g = float(gain(sqr, var, batch / self.profile.init_batch_size))
        return step, sync, batch / total, g * self.profile.init_batch_size / batch, g / total

    def observe(self, t: float) -> dict[str, float]:
        """Run at the current configuration: record what the job measures
        (step/sync time, gradient statistics), refit if due, set the true rate."""
        step, sync, tput, eff, rate = self.true_rates()
        self.rate = rate
        key = (len(self.placement), self.replicas, self.micro)
        sqr, var = self.profile.grad_stats(self.batch_size, self.epoch)
        if key not in self._observed:
            self._observed[key] = (step, sync)
            self.max_observed_replicas = max(self.max_observed_replicas, self.replicas)
            if self._perf is None or not predicts_well(self._perf, *key, step, sync,
                                                        tol=self.REFIT_TOLERANCE):
                self._stale = True
        changed = self.refit(t)
        if self._grad is None or (self._grad.sqr, self._grad.var) != (sqr, var):
            self._grad = GradParams(sqr, var)
            changed = True
        if changed:
            self.model = GoodputModel(self._perf, self._grad, self.profile.init_batch_size)
        return {"step_time": step, "sync_time": sync, "throughput": tput, "efficiency": eff,
                "goodput": tput * eff, "grad_sqr": sqr, "grad_var": var}

    def refit(self, t: float) -> bool:
        """Refit the throughput model if it is stale and a refit is due."""
        if not self._stale or (self._perf is not None and t - self._fit_at < self.REFIT_INTERVAL):
            return False
        obs = np.array([(*k, *v) for k, v in self._observed.items()], dtype=float)
        self._perf = fit_perf_params(obs[:, 0], obs[:, 1], obs[:, 2], obs[:, 3], obs[:, 4],
                                     init=self._perf)
        self._stale, self._fit_at = False, t
        if self._grad is not None:
            self.model = GoodputModel(self._perf, self._grad, self.profile.init_batch_size)
        return True

    # ------------------------------------------------------------- decisions
    def choose_batch(self, batch: int | None) -> None:
        """Set micro-batch and accumulation for a batch the scheduler chose;
        with none given, an adaptive job takes its own goodput optimum (as an
        AdaptDL agent does between rounds), a fixed one its request."""
        p, r = self.profile, self.replicas
        if batch is None and self.adaptive and self.model is not None:
            c = self.model.optimize(np.array([len(self.placement)]), np.array([r]),
                                    p.max_batch_size, (p.min_local_bsz, p.max_local_bsz))
            self.micro, self.accum = int(c.local_bsz[0]), int(c.accum_steps[0])
            return
        if batch is None:
            batch = max(p.init_batch_size, p.min_local_bsz * r) if self.adaptive else \
                self.spec.batch_size
        self.micro, self.accum = p.split_batch(batch, r)

    def reallocate(self, t: float, allocation: tuple[int, ...], delay: float) -> None:
        self.allocation = allocation
        self.version += 1
        self.rate = 0.0
        if self.replicas:
            self.restarts += 1
            self.run_from = t + delay
        else:
            self.micro = self.accum = 0

    def time_to_boundary(self) -> float:
        """Seconds of running until the current epoch ends."""
        target = self.profile.epoch_progress[self.epoch + 1]
        return max(target - self.progress, 0.0) / self.rate if self.rate > 0 else np.inf

    def finish_epoch(self) -> bool:
        """Cross an epoch boundary; True when that completes the job."""
        self.progress = float(self.profile.epoch_progress[self.epoch + 1])
        self.epoch += 1
        return self.epoch > self.profile.completion_epoch(self.batch_size)
