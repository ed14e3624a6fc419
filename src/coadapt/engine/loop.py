"""The scheduling loop on a SimPy clock, for simulated and live jobs alike.

Two engine processes: arrivals (a job is created by the backend and logged as
``submit``) and a round every ``interval`` seconds (each job syncs, the policy
sees a snapshot of the records, each job applies its assignment, ``allocate``
and ``round`` are logged). Everything else a job does between rounds is the
backend's (``engine.backend``). On ``simpy.Environment`` this is a simulation;
on ``simpy.rt.RealtimeEnvironment`` with the live backend it runs real jobs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import simpy

from coadapt.engine.backend import Backend, JobHandle
from coadapt.eventlog import EventLog
from coadapt.models.batching import JobLimits
from coadapt.policies.base import Assignment, Decision, Policy, Snapshot
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import JobSpec, Workload


class DecisionError(RuntimeError):
    """A policy returned a decision the cluster cannot carry out."""


@dataclass
class EngineResult:
    jobs: list[JobHandle]
    decision_ms: list[float] = field(default_factory=list)


class Engine:
    STALL_ROUNDS = 200
    """Rounds in a row in which jobs wait and the policy gives nobody a slot
    before the run fails loudly instead of looping forever."""

    def __init__(self, workload: Workload, limits: Mapping[str, JobLimits], backend: Backend,
                 policy: Policy, cluster: ClusterSpec, log: EventLog, *,
                 interval: float = 60.0, restart_delay: float = 30.0,
                 env: simpy.Environment | None = None,
                 on_progress: Callable[[int, int, float], None] | None = None,
                 round_info: Callable[[float], dict[str, Any]] | None = None,
                 first_round: float | None = None,
                 kind_speed: Mapping[str, Mapping[str, float]] | None = None,
                 restart_penalty: Mapping[str, float] | None = None) -> None:
        self.workload, self.limits, self.backend, self.policy = workload, limits, backend, policy
        self.kind_speed = kind_speed or {}  # Sia's bootstrap, shown to every policy
        self.restart_penalty = restart_penalty or {}
        self.cluster, self.log = cluster, log
        self.interval, self.restart_delay = interval, restart_delay
        self.env = env or simpy.Environment()
        self.on_progress = on_progress
        self.round_info = round_info
        self.first_round = interval if first_round is None else first_round
        self._kinds = len(cluster.kinds) > 1  # allocate events name the kind
        self.active: list[JobHandle] = []
        self.jobs: list[JobHandle] = []
        self.abandoned: set[str] = set()
        self.result = EngineResult(self.jobs)
        self._pending: list[JobSpec] = list(workload.jobs)
        self._done = self.env.event()
        self._idle_rounds = 0
        self._stuck_rounds = 0
        self._last_work: tuple[int, float] = (-1, -1.0)

    # ------------------------------------------------------------------ run
    def adopt(self, job: JobHandle, abandoned: bool = False) -> None:
        """Take over a job submitted before the clock started (a resumed run)."""
        self._pending = [s for s in self._pending if s.name != job.record.name]
        self.jobs.append(job)
        if abandoned:
            self.abandoned.add(job.record.name)
        elif job.record.completed_at is None:
            self.active.append(job)

    def run(self) -> EngineResult:
        self.backend.bind(self)
        self.env.process(self._arrivals())
        self.env.process(self._rounds())
        if not self.active and not self._pending:
            self._done.succeed()
        self.env.run(until=self._done)
        return self.result

    def _arrivals(self):
        for spec in self._pending:
            if spec.submit_time > self.env.now:
                yield self.env.timeout(spec.submit_time - self.env.now)
            job = self.backend.create(spec, self.limits[spec.application], self.env.now)
            self.jobs.append(job)
            self.active.append(job)
            self.log.emit(self.env.now, "submit", spec.name, application=spec.application,
                          requested_replicas=spec.num_replicas, requested_batch=spec.batch_size,
                          weight=spec.weight)

    def _rounds(self):
        yield self.env.timeout(self.first_round)
        while True:
            self.round(self.env.now)
            yield self.env.timeout(self.interval)

    # ---------------------------------------------------------------- rounds
    def round(self, now: float) -> None:
        for job in list(self.active):  # a live job may complete while it syncs
            job.sync(now)
        nodes = self.cluster.num_nodes
        snap = Snapshot(now, self.cluster.nodes,
                        tuple(j.record.view(now, nodes, self._oracle(j)) for j in self.active),
                        self.restart_delay, self.interval, self.kind_speed,
                        self.restart_penalty)
        t0 = time.perf_counter()
        decision = self.policy.decide(snap)
        ms = (time.perf_counter() - t0) * 1e3
        self.result.decision_ms.append(ms)
        empty = (0,) * nodes
        self.check(decision)
        used = 0
        for job in list(self.active):
            a = decision.get(job.record.name, Assignment(empty))
            used += sum(a.allocation)
            if job.apply(a, now):
                r = job.record
                on = {"node_kind": r.kind} if self._kinds and r.replicas else {}
                self.log.emit(now, "allocate", r.name, allocation=list(a.allocation),
                              replicas=r.replicas, nodes=len(r.nodes_used), batch=r.batch_size,
                              micro=r.micro, accum=r.accum, restart=r.restarts > 0,
                              adaptive=r.adaptive, **on)
        self._watch(used, now)
        self._watch_progress(now)
        extra = self.round_info(now) if self.round_info is not None else {}
        self.log.emit(now, "round", None, decision_ms=ms, active=len(self.active),
                      used_slots=used, utilization=used / self.cluster.total_slots, **extra)

    def _watch(self, used: int, now: float) -> None:
        """Fail when the policy starves every waiting job for STALL_ROUNDS rounds
        (e.g. a request no node combination can ever satisfy)."""
        busy = used or any(j.record.replicas for j in self.active)
        self._idle_rounds = 0 if busy or not self.active else self._idle_rounds + 1
        if self._idle_rounds >= self.STALL_ROUNDS:
            waiting = ", ".join(f"{j.record.name} (asks {j.record.spec.num_replicas})"
                                for j in self.active[:5])
            raise DecisionError(
                f"policy {self.policy.name} gave no job a slot for {self.STALL_ROUNDS} rounds "
                f"(t={now:.0f} s) while {len(self.active)} wait: {waiting}; the cluster "
                f"{self.cluster} has {self.cluster.total_slots} slots")

    def _watch_progress(self, now: float) -> None:
        """Fail when jobs hold slots but none makes progress or completes for
        STALL_ROUNDS rounds (a livelock: e.g. a policy that reallocates every
        round while a restart takes longer than a round), or at once when a
        job's progress is not a number."""
        bad = [f"{j.record.name} ({j.record.progress})" for j in self.active
               if not math.isfinite(j.record.progress)]
        if bad:
            raise DecisionError(f"progress is not a number for {', '.join(bad)} at t={now:.0f} s "
                                "(a NaN or infinite rate in the job model)")
        work = (sum(j.record.completed_at is not None for j in self.jobs),
                sum(j.record.progress for j in self.jobs))
        holding = [j for j in self.active if j.record.replicas]
        stuck = bool(holding) and work <= self._last_work
        self._last_work = max(work, self._last_work)
        self._stuck_rounds = self._stuck_rounds + 1 if stuck else 0
        if self._stuck_rounds >= self.STALL_ROUNDS:
            names = ", ".join(f"{j.record.name} ({j.record.restarts} restarts)"
                              for j in holding[:5])
            raise DecisionError(
                f"no job made progress for {self.STALL_ROUNDS} rounds (t={now:.0f} s) although "
                f"{len(holding)} hold slots: {names}; restart delay {self.restart_delay:g} s, "
                f"round {self.interval:g} s: a policy that reallocates every round while a "
                "restart outlasts a round never lets a job run")

    def _oracle(self, job: JobHandle):
        return job.oracle() if self.policy.uses_oracle else None

    def check(self, decision: Decision) -> None:
        """Fail loudly on a decision that names unknown jobs, has the wrong
        number of nodes or overfills a node."""
        names = {j.record.name for j in self.active}
        load = [0] * self.cluster.num_nodes
        for name, a in decision.items():
            if name not in names:
                raise DecisionError(f"policy {self.policy.name} allocated to {name!r}, which is "
                                    "not an active job")
            if len(a.allocation) != self.cluster.num_nodes or min(a.allocation, default=0) < 0:
                raise DecisionError(f"policy {self.policy.name} gave {name} the allocation "
                                    f"{a.allocation}; the cluster has {self.cluster.num_nodes} "
                                    "nodes")
            load = [x + y for x, y in zip(load, a.allocation, strict=True)]
            if self._kinds:
                try:
                    self.cluster.kind_of(a.allocation)
                except ValueError as err:
                    raise DecisionError(f"policy {self.policy.name} gave {name} {err}") from None
        over = [i for i, (x, cap) in enumerate(zip(load, self.cluster.slots_per_node, strict=True))
                if x > cap]
        if over:
            raise DecisionError(f"policy {self.policy.name} overfills node(s) {over}: "
                                f"{load} slots asked of {list(self.cluster.slots_per_node)}")

    # ------------------------------------------------------------ completion
    def complete(self, job: JobHandle, now: float, **fields: Any) -> None:
        """A backend reports that ``job`` reached its target (verified if live)."""
        r = job.record
        r.completed_at = now
        self.active.remove(job)
        self.log.emit(now, "complete", r.name, jct=now - r.spec.submit_time,
                      progress=r.progress, restarts=max(r.restarts, 0), **fields)
        self._finished(now)

    def abandon(self, job: JobHandle, now: float, reason: str) -> None:
        """A backend gives up on ``job`` (e.g. it failed more often than
        allowed): it leaves the schedule without a completion."""
        self.active.remove(job)
        self.abandoned.add(job.record.name)
        self.log.emit(now, "fail", job.record.name, reason=reason, fatal=True, abandoned=True)
        self._finished(now)

    def _finished(self, now: float) -> None:
        done = sum(j.record.completed_at is not None for j in self.jobs) + len(self.abandoned)
        total = len(self.workload.jobs)
        if self.on_progress is not None:
            self.on_progress(done, total, now)
        if done == total and not self._done.triggered:
            self._done.succeed()
