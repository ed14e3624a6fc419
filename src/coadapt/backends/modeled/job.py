"""A modeled training job: advances by its profile, reports what it observes.

Progress (iterations at M0) accrues at rate r(S) / T_step while the job holds
slots and is past its restart delay; the rate is constant between events
(allocation changes, restarts ending, epoch boundaries), so the engine can
jump from event to event. What the job measures goes into its record's
observations, as an AdaptDL agent's would; the fitted model built from them,
not the profile, is what the policy sees. With ``--observation-noise`` those
reports (not the truth) carry a log-normal error (:class:`ReportNoise`).

The truth's r(S) is the formula times the measured correction of
``world.profiles.efficiency`` where the profile ran to target at several batch
sizes (``--efficiency-truth curves``, the default); the reports stay the
gradient statistics, so a policy's fitted model is the formula alone and is
wrong exactly where the measurements say it is.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from coadapt.backends.modeled.services import ModeledServices
from coadapt.engine.record import JobRecord
from coadapt.models.batching import step_with_accum
from coadapt.policies.base import Assignment, Oracle
from coadapt.world.profiles.efficiency import MeasuredEfficiency
from coadapt.world.profiles.profile import AppProfile, Spread
from coadapt.world.truth import StepTruth, true_gain


def check_observation_noise(scale: float) -> float:
    """``scale`` if it is a finite number >= 0; else a ValueError naming the option."""
    if not math.isfinite(scale) or scale < 0:
        raise ValueError(f"--observation-noise must be a finite number >= 0 (0 is off), "
                         f"got {scale!r}")
    return float(scale)


@dataclass
class ReportNoise:
    """Profile error on one job's reports: step time, sync time and grad_var
    (hence the noise scale phi = M0 grad_var / grad_sqr) are each multiplied
    by exp(scale * cv * z), z ~ N(0, 1) drawn afresh per report, with cv from
    the profile's measured :class:`Spread`. A report is a fresh measurement,
    so repeated reports of one configuration scatter and the agent's median
    over its window damps them, as a live agent's would."""

    scale: float
    spread: Spread
    rng: np.random.Generator = field(repr=False)

    @classmethod
    def for_job(cls, scale: float, spread: Spread, seed: int, name: str) -> ReportNoise | None:
        """Draws seeded by (run seed, job name): reproducible, and no two jobs
        share a stream. None when the reports would be exact."""
        cv = (spread.step_cv, spread.sync_cv, spread.noise_cv)
        if scale == 0 or not any(cv):
            return None
        tag = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")
        rng = np.random.default_rng(np.random.SeedSequence([seed % 2**64, tag]))
        return cls(scale, spread, rng)

    def apply(self, step: float, sync: float, var: float) -> tuple[float, float, float]:
        """Reported (step, sync, grad_var); sync stays within the step, as measured."""
        cv = np.array([self.spread.step_cv, self.spread.sync_cv, self.spread.noise_cv])
        f = np.exp(self.scale * cv * self.rng.standard_normal(3))
        rep = np.array([step, sync, var]) * f
        return float(rep[0]), float(min(rep[1], rep[0])), float(rep[2])


@dataclass
class ModeledJob:
    """The profile's ground truth for one job, next to the record it reports into;
    ``services`` is what it may ask of its backend (timers, costs), not the backend."""

    record: JobRecord
    profile: AppProfile
    truth_of: Callable[[str | None], StepTruth]  # the truth of its type on a kind of node
    services: ModeledServices
    efficiency: MeasuredEfficiency | None  # the truth's correction of the gain formula
    epoch: int = 0
    run_from: float = 0.0
    rate: float = 0.0
    version: int = 0  # bumped on every state change; stale timers compare it
    factor: float = 1.0  # compute slowdown from jobs sharing its node (measured costs)
    launch: int = 0  # bumped on every reallocation (scripted rebatches belong to one)
    finishing: bool = False  # target reached; final validation and verification under way
    final_metric: float | None = None
    allocated_at: float = 0.0
    noise: ReportNoise | None = None  # error on the reports only; None: exact

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def truth(self) -> StepTruth:
        """The truth of the kind of node it runs on (or ran on last)."""
        return self.truth_of(self.record.kind)

    def advance(self, t: float) -> None:
        """Accrue service and progress up to ``t`` (no event lies in between)."""
        r = self.record
        last = r.last_t
        if t <= last:
            return
        if r.replicas:
            running = t - max(last, self.run_from)
            if running > 0:
                r.progress += self.rate * running
        r.accrue(t)

    def true_rates(self) -> tuple[float, float, float, float, float]:
        """(step, sync, throughput, efficiency, progress rate) from the profile."""
        r = self.record
        step, sync = self.truth.throughput(r.placement, r.micro)
        if self.factor != 1.0:
            step = sync + (step - sync) * self.factor
        total = step_with_accum(step, sync, r.accum)
        batch = r.batch_size
        m0 = r.limits.init_batch_size
        sqr, var = self.profile.grad_stats(batch, self.epoch)
        g = float(true_gain(sqr, var, batch, m0, self.efficiency))
        return step, sync, batch / total, g * m0 / batch, g / total

    def observe(self, t: float) -> dict[str, float]:
        """Run at the current configuration: report what the job measures
        (step/sync time, gradient statistics) and set the true rate. The
        logged step/sync time and gradient statistics are the reports;
        throughput, efficiency and goodput stay the truth (the experimenter's
        goodput timeline, never shown to a policy)."""
        r = self.record
        step, sync, tput, eff, rate = self.true_rates()
        self.rate = rate
        sqr, var = self.profile.grad_stats(r.batch_size, self.epoch)
        if self.noise is not None:
            step, sync, var = self.noise.apply(step, sync, var)
        r.obs.record(r.obs_key, step, sync)
        r.obs.refit(t)
        r.obs.set_grad(sqr, var)
        return {"step_time": step, "sync_time": sync, "throughput": tput, "efficiency": eff,
                "goodput": tput * eff, "grad_sqr": sqr, "grad_var": var}

    def reallocate(self, t: float, allocation: tuple[int, ...]) -> float:
        """A new allocation; returns the delay before the job runs again."""
        self.record.set_allocation(allocation)
        self.version += 1
        self.launch += 1
        self.allocated_at = t
        self.rate = 0.0
        delay = 0.0
        if self.record.replicas:
            delay = self.services.restart_delay(self.record)
            self.run_from = t + delay
        return delay

    def time_to_boundary(self, now: float) -> float:
        """Seconds until the current epoch ends (a pause still under way included)."""
        target = self.profile.epoch_progress[self.epoch + 1]
        left = max(target - self.record.progress, 0.0)
        if self.rate <= 0:
            return np.inf
        return max(self.run_from - now, 0.0) + left / self.rate

    def finish_epoch(self) -> bool:
        """Cross an epoch boundary; True when that completes the job."""
        self.record.progress = float(self.profile.epoch_progress[self.epoch + 1])
        self.epoch += 1
        return self.epoch > self.profile.completion_epoch(self.record.batch_size)

    def metric(self) -> float | None:
        return self.profile.best_metric(self.record.batch_size, self.epoch)

    # ------------------------------------------------------ the handle protocol
    def sync(self, now: float) -> None:
        self.advance(now)
        self.record.obs.refit(now)
        self.record.restoring = now < self.run_from

    def apply(self, a: Assignment, now: float) -> bool:
        """A new allocation restarts the job after the restart delay; the same
        allocation with an adaptive batch re-tunes the batch in place."""
        r = self.record
        current = r.allocation or (0,) * len(a.allocation)
        new = a.allocation if sum(a.allocation) else ()
        if a.allocation != current and self.finishing:
            # Like a live job under verification: the record follows the policy,
            # the job itself only finishes (no restart happens, none is counted).
            r.allocation = new
            if not r.replicas:
                r.micro = r.accum = 0
            r.adaptive = a.adaptive
            if r.replicas:
                r.choose_batch(a.batch_size)
            return True
        if a.allocation != current:
            self.advance(now)
            r.adaptive = a.adaptive
            delay = self.reallocate(now, new)
            if r.replicas:
                r.choose_batch(a.batch_size)
                self.services.start_after(self, delay)
            self.services.neighbours_changed()
            return True
        if r.replicas and a.adaptive and now >= self.run_from and not self.finishing:
            old = (r.micro, r.accum)
            r.choose_batch(a.batch_size)
            if (r.micro, r.accum) != old:
                self.advance(now)
                self.version += 1
                self.services.rebatched(self, now)
        return False

    def oracle(self) -> Oracle:
        p, truth = self.profile, self.truth
        return Oracle(
            remaining_iterations=lambda b: p.remaining_iterations(b, self.epoch),
            step_time=lambda pl, m, s: float(step_with_accum(*truth.throughput(pl, m), s)),
        )
