"""The scheduling loop on a SimPy clock.

Three kinds of SimPy activity: arrivals, a round every ``interval`` seconds
(snapshot -> policy -> apply), and per-job timers for the next state change
(restart delay over, epoch boundary). Between events every job's progress is
linear in time, so nothing ticks. The same loop runs live on a
``simpy.rt.RealtimeEnvironment`` with a different job backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

from coadapt.eventlog import EventLog
from coadapt.policies.base import Assignment, JobView, Oracle, Policy, Snapshot
from coadapt.profiling.profile import AppProfile
from coadapt.sim.cluster import ClusterSpec
from coadapt.sim.job import SimJob
from coadapt.workloads.workload import Workload


@dataclass
class EngineResult:
    jobs: list[SimJob]
    decision_ms: list[float] = field(default_factory=list)
    end_time: float = 0.0


class Engine:
    def __init__(self, workload: Workload, profiles: dict[str, AppProfile], policy: Policy,
                 cluster: ClusterSpec, log: EventLog, *, interval: float = 60.0,
                 restart_delay: float = 30.0, env: simpy.Environment | None = None,
                 on_progress: Callable[[int, int, float], None] | None = None) -> None:
        self.workload, self.profiles, self.policy = workload, profiles, policy
        self.cluster, self.log = cluster, log
        self.interval, self.restart_delay = interval, restart_delay
        self.env = env or simpy.Environment()
        self.on_progress = on_progress
        self.active: list[SimJob] = []
        self.jobs: list[SimJob] = []
        self.result = EngineResult(self.jobs)
        self._done = self.env.event()

    # ------------------------------------------------------------------ run
    def run(self) -> EngineResult:
        self.env.process(self._arrivals())
        self.env.process(self._rounds())
        self.env.run(until=self._done)
        self.result.end_time = self.env.now
        return self.result

    def _arrivals(self):
        for spec in self.workload.jobs:
            if spec.submit_time > self.env.now:
                yield self.env.timeout(spec.submit_time - self.env.now)
            profile = self.profiles[spec.application]
            job = SimJob(spec, profile, max_replicas=profile.max_replicas, last_t=self.env.now)
            self.jobs.append(job)
            self.active.append(job)
            self.log.emit(self.env.now, "submit", job.name, application=spec.application,
                          requested_replicas=spec.num_replicas, requested_batch=spec.batch_size)

    def _rounds(self):
        while True:
            yield self.env.timeout(self.interval)
            self._round(self.env.now)

    # ---------------------------------------------------------------- rounds
    def _view(self, job: SimJob, now: float) -> JobView:
        p = job.profile
        oracle = None
        if self.policy.uses_oracle:
            oracle = Oracle(
                remaining_iterations=lambda b, j=job: j.profile.remaining_iterations(b, j.epoch),
                step_time=lambda pl, m, s, pr=p: _step_with_accum(pr, pl, m, s),
            )
        return JobView(
            name=job.name, application=job.spec.application, submit_time=job.spec.submit_time,
            age=now - job.spec.submit_time, attained_service=job.attained,
            restarts=max(job.restarts, 0), allocation=job.allocation or self._empty,
            batch_size=job.batch_size, requested_replicas=job.spec.num_replicas,
            requested_batch=job.spec.batch_size, init_batch_size=p.init_batch_size,
            max_batch_size=p.max_batch_size, min_local_bsz=p.min_local_bsz,
            max_local_bsz=p.max_local_bsz, max_replicas=job.max_replicas,
            max_observed_replicas=job.max_observed_replicas, progress=job.progress,
            model=job.model, oracle=oracle,
        )

    @property
    def _empty(self) -> tuple[int, ...]:
        return (0,) * self.cluster.num_nodes

    def _round(self, now: float) -> None:
        for job in self.active:
            job.advance(now)
            job.refit(now)
        snap = Snapshot(now, self.cluster.slots_per_node,
                        tuple(self._view(j, now) for j in self.active),
                        self.restart_delay, self.interval)
        t0 = time.perf_counter()
        decision = self.policy.decide(snap)
        ms = (time.perf_counter() - t0) * 1e3
        self.result.decision_ms.append(ms)
        used = 0
        for job in self.active:
            a = decision.get(job.name, Assignment(self._empty))
            self._check(job, a)
            used += sum(a.allocation)
            self._apply(job, a, now)
        self.log.emit(now, "round", None, decision_ms=ms, active=len(self.active),
                      used_slots=used, utilization=used / self.cluster.total_slots)

    def _check(self, job: SimJob, a: Assignment) -> None:
        if len(a.allocation) != self.cluster.num_nodes:
            raise RuntimeError(f"policy {self.policy.name} gave {job.name} an allocation for "
                               f"{len(a.allocation)} nodes, cluster has {self.cluster.num_nodes}")

    def _apply(self, job: SimJob, a: Assignment, now: float) -> None:
        current = job.allocation or self._empty
        if a.allocation != current:
            job.reallocate(now, a.allocation if sum(a.allocation) else (), self.restart_delay)
            job.adaptive = a.adaptive
            if job.replicas:
                job.choose_batch(a.batch_size)
            self.log.emit(now, "allocate", job.name, allocation=list(a.allocation),
                          replicas=job.replicas, nodes=len(job.placement),
                          batch=job.batch_size, micro=job.micro, accum=job.accum,
                          restart=job.restarts > 0)
            if job.replicas:
                self._timer(job, self.restart_delay, self._on_start)
        elif job.replicas and a.adaptive and now >= job.run_from:
            old = (job.micro, job.accum)
            job.choose_batch(a.batch_size)
            if (job.micro, job.accum) != old:
                job.version += 1
                obs = job.observe(now)
                self.log.emit(now, "progress", job.name, batch=job.batch_size, micro=job.micro,
                              accum=job.accum, epoch=job.epoch, progress=job.progress, **obs)
                self._timer(job, job.time_to_boundary(), self._on_boundary)

    # ---------------------------------------------------------------- timers
    def _timer(self, job: SimJob, delay: float, fn: Callable[[SimJob, int], None]) -> None:
        version = job.version
        ev = self.env.timeout(max(delay, 0.0))
        ev.callbacks.append(lambda _ev: fn(job, version))

    def _on_start(self, job: SimJob, version: int) -> None:
        if version != job.version:
            return
        now = self.env.now
        job.advance(now)
        obs = job.observe(now)
        self.log.emit(now, "start", job.name, batch=job.batch_size, epoch=job.epoch,
                      progress=job.progress, **obs)
        self._timer(job, job.time_to_boundary(), self._on_boundary)

    def _on_boundary(self, job: SimJob, version: int) -> None:
        if version != job.version:
            return
        now = self.env.now
        job.advance(now)
        if job.finish_epoch():
            self._complete(job, now)
            return
        job.version += 1
        if job.adaptive:
            job.choose_batch(None)
        obs = job.observe(now)
        self.log.emit(now, "epoch", job.name, epoch=job.epoch, progress=job.progress,
                      batch=job.batch_size, micro=job.micro, accum=job.accum,
                      metric=job.profile.best_metric(job.batch_size, job.epoch), **obs)
        self._timer(job, job.time_to_boundary(), self._on_boundary)

    def _complete(self, job: SimJob, now: float) -> None:
        job.completed_at = now
        job.version += 1
        job.rate = 0.0
        self.active.remove(job)
        self.log.emit(now, "complete", job.name, jct=now - job.spec.submit_time,
                      epoch=job.epoch, progress=job.progress, restarts=max(job.restarts, 0),
                      metric=job.profile.best_metric(job.batch_size, job.epoch),
                      verified=None, simulated=True)
        done = sum(j.completed_at is not None for j in self.jobs)
        if self.on_progress is not None:
            self.on_progress(done, len(self.workload.jobs), now)
        if done == len(self.workload.jobs):
            self._done.succeed()


def _step_with_accum(profile: AppProfile, placement: tuple[int, ...], micro: int,
                     accum: int) -> float:
    step, sync = profile.throughput(placement, micro)
    return step + accum * (step - sync)
