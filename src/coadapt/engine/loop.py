"""The scheduling loop on a SimPy clock, for simulated and live jobs alike.

Two engine processes: arrivals (a job is created by the backend and logged as
``submit``) and a round every ``interval`` seconds (each job syncs, the policy
sees a snapshot of the records, each job applies its assignment, ``allocate``
and ``round`` are logged). Everything else a job does between rounds is the
backend's (``engine.backend``). On ``simpy.Environment`` this is a simulation;
on ``simpy.rt.RealtimeEnvironment`` with the live backend it runs real jobs.

Every run ends: at the last job's completion, or at its horizon (a generous
multiple of what the workload should take, see :func:`default_horizon`),
where the unfinished jobs are stopped and logged as failed with the reason.
A request for more replicas than any job can hold on the cluster is adjusted
down to what it can (as the Pollux study's simulator clamps), logged on its
``submit`` and counted in the summary; requests outside their job type's
limits are refused (``world.workload.check_requests``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

import numpy as np
import simpy

from coadapt.engine.backend import Backend, JobHandle
from coadapt.eventlog import EventLog
from coadapt.models.batching import JobLimits
from coadapt.policies.base import Assignment, Decision, Policy, Snapshot
from coadapt.world.cluster import ClusterSpec, allocation_matrix
from coadapt.world.workload import JobSpec, Workload, check_requests

logger = logging.getLogger(__name__)

HORIZON_FACTOR = 20.0
"""The default horizon's multiple of the workload's last submit time plus its
jobs' isolated run time (what a FIFO queue of the whole workload would take)."""
HORIZON_SLACK = 86400.0
"""Added to that multiple: a day."""
HORIZON_UNKNOWN = 30 * 86400.0
"""Added instead when no isolated time is known (30 days)."""
IDLE_SKIP = 1000
"""Rounds with no job active and none arriving: beyond this many the clock
jumps to the next arrival's round instead of logging empty rounds (a job
submitted years later writes no gigabytes of them)."""


def default_horizon(workload: Workload, isolated: float | None = None) -> float:
    """When a run of ``workload`` gives up: HORIZON_FACTOR x (last submit time +
    ``isolated``, the jobs' summed isolated seconds at their requests) + a day,
    or + 30 days without an estimate."""
    last = max((j.submit_time for j in workload.jobs), default=0.0)
    if isolated is not None and math.isfinite(isolated) and isolated > 0:
        return HORIZON_FACTOR * (last + isolated) + HORIZON_SLACK
    return HORIZON_FACTOR * last + HORIZON_UNKNOWN


class DecisionError(RuntimeError):
    """A policy returned a decision the cluster cannot carry out."""


@dataclass
class EngineResult:
    jobs: list[JobHandle]
    decision_ms: list[float] = field(default_factory=list)
    horizon_reached: bool = False  # stopped at the horizon; the unfinished jobs failed


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
                 restart_penalty: Mapping[str, float] | None = None,
                 horizon: float | None = None) -> None:
        check_requests(workload, limits)
        self.horizon = default_horizon(workload) if horizon is None else float(horizon)
        if not (math.isfinite(self.horizon) and self.horizon > 0):
            raise ValueError(f"--horizon {horizon}: must be a finite number of seconds > 0")
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
        self._arrived = 0  # how many of _pending have been submitted
        self._completed = 0  # counters, so no round walks the jobs that left
        self._left_progress = 0.0  # the progress of jobs no longer active
        self._expired = False
        self._cap = cluster.max_job_slots
        over = [s for s in workload.jobs if s.num_replicas > self._cap]
        if over:
            logger.warning("%d job(s) ask for more replicas than one job can hold on %s: "
                           "adjusted down to %d: %s", len(over), cluster, self._cap,
                           ", ".join(f"{s.name} ({s.num_replicas})" for s in over[:5]))

    # ------------------------------------------------------------------ run
    def adopt(self, job: JobHandle, abandoned: bool = False) -> None:
        """Take over a job submitted before the clock started (a resumed run)."""
        self._pending = [s for s in self._pending if s.name != job.record.name]
        self.jobs.append(job)
        if abandoned:
            self.abandoned.add(job.record.name)
        elif job.record.completed_at is None:
            self.active.append(job)
            return
        else:
            self._completed += 1
        self._left_progress += job.record.progress

    def run(self) -> EngineResult:
        self.backend.bind(self)
        self.env.process(self._arrivals())
        self.env.process(self._rounds())
        self.env.process(self._deadline())
        if not self.active and not self._pending:
            self._done.succeed()
        self.env.run(until=self._done)
        return self.result

    def _arrivals(self):
        for spec in self._pending:
            if spec.submit_time > self.env.now:
                yield self.env.timeout(spec.submit_time - self.env.now)
            if self._expired:
                return
            adjusted = {}
            if spec.num_replicas > self._cap:  # what the policies' clamp did, said once here
                adjusted = {"adjusted_replicas": self._cap,
                            "adjusted": f"asks {spec.num_replicas} replicas; one job can hold "
                                        f"at most {self._cap} on {self.cluster}"}
            run_as = replace(spec, num_replicas=self._cap) if adjusted else spec
            job = self.backend.create(run_as, self.limits[spec.application], self.env.now)
            self._arrived += 1
            self.jobs.append(job)
            self.active.append(job)
            self.log.emit(self.env.now, "submit", spec.name, application=spec.application,
                          requested_replicas=spec.num_replicas, requested_batch=spec.batch_size,
                          weight=spec.weight, **adjusted)

    def _rounds(self):
        yield self.env.timeout(self.first_round)
        while not self._expired:
            self.round(self.env.now)
            yield self.env.timeout(self._next_round())

    def _next_round(self) -> float:
        """One interval; or, with no job active and the next arrival more than
        IDLE_SKIP rounds away, the whole rounds up to that arrival's round."""
        if self.active or self._arrived >= len(self._pending):
            return self.interval
        rounds = math.ceil((self._pending[self._arrived].submit_time - self.env.now)
                           / self.interval)
        return rounds * self.interval if rounds > IDLE_SKIP else self.interval

    def _deadline(self):
        yield self.env.timeout(max(self.horizon - self.env.now, 0.0))
        if not self._done.triggered:
            self.expire(self.env.now)

    def expire(self, now: float) -> None:
        """The horizon passed: stop every unfinished job, log it failed with the
        reason (and each job not yet submitted), and end the run."""
        self._expired = self.result.horizon_reached = True
        reason = (f"the run's horizon ({self.horizon:g} s) passed before it finished "
                  "(--horizon sets it)")
        empty = Assignment((0,) * self.cluster.num_nodes)
        unfinished = len(self.active) + len(self._pending) - self._arrived
        for job in list(self.active):
            r = job.record
            if r.replicas and job.apply(empty, now):
                self.log.emit(now, "allocate", r.name, allocation=list(empty.allocation),
                              replicas=0, nodes=0, batch=0, micro=0, accum=0, restart=False,
                              adaptive=r.adaptive, reason="horizon")
            self._leave(job)
            self.abandoned.add(r.name)
            self.log.emit(now, "fail", r.name, reason=reason, fatal=True, abandoned=True,
                          horizon=self.horizon)
        for spec in self._pending[self._arrived:]:
            self.abandoned.add(spec.name)
            self.log.emit(now, "fail", spec.name, reason=f"{reason}; not submitted: its submit "
                          f"time is {spec.submit_time:g} s", fatal=True, abandoned=True,
                          submitted=False, horizon=self.horizon)
        logger.warning("horizon %g s reached: %d job(s) unfinished, logged as failed",
                    self.horizon, unfinished)
        if not self._done.triggered:
            self._done.succeed()

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
        work = (self._completed,
                self._left_progress + sum(j.record.progress for j in self.active))
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
        nodes = self.cluster.num_nodes
        for name, a in decision.items():
            if name not in names:
                raise DecisionError(f"policy {self.policy.name} allocated to {name!r}, which is "
                                    "not an active job")
            if len(a.allocation) != nodes:
                self._bad_allocation(name, a.allocation)
            if self._kinds:
                try:
                    self.cluster.kind_of(a.allocation)
                except ValueError as err:
                    raise DecisionError(f"policy {self.policy.name} gave {name} {err}") from None
        if not decision:
            return
        # every job's entries at once (a million a round at a thousand jobs and nodes)
        rows = allocation_matrix([a.allocation for a in decision.values()], nodes)
        if rows.dtype != np.uint8:  # an entry that is not 0-255: a negative one?
            for name, a in decision.items():
                if min(a.allocation, default=0) < 0:
                    self._bad_allocation(name, a.allocation)
        load = rows.sum(axis=0, dtype=np.int64)
        over = np.flatnonzero(load > np.array(self.cluster.slots_per_node)).tolist()
        if over:
            raise DecisionError(f"policy {self.policy.name} overfills node(s) {over}: "
                                f"{load.tolist()} slots asked of {list(self.cluster.slots_per_node)}")

    def _bad_allocation(self, name: str, allocation: tuple) -> NoReturn:
        raise DecisionError(f"policy {self.policy.name} gave {name} the allocation "
                            f"{allocation}; the cluster has {self.cluster.num_nodes} "
                            "nodes (an allocation is a number of slots >= 0 per node)")

    # ------------------------------------------------------------ completion
    def complete(self, job: JobHandle, now: float, **fields: Any) -> None:
        """A backend reports that ``job`` reached its target (verified if live)."""
        if self._expired:  # at the horizon's instant: it was logged failed already
            return
        r = job.record
        r.completed_at = now
        self._completed += 1
        self._leave(job)
        self.log.emit(now, "complete", r.name, jct=now - r.spec.submit_time,
                      progress=r.progress, restarts=max(r.restarts, 0), **fields)
        r.release()
        self._finished(now)

    def abandon(self, job: JobHandle, now: float, reason: str) -> None:
        """A backend gives up on ``job`` (e.g. it failed more often than
        allowed): it leaves the schedule without a completion."""
        if self._expired:
            return
        self._leave(job)
        self.abandoned.add(job.record.name)
        self.log.emit(now, "fail", job.record.name, reason=reason, fatal=True, abandoned=True)
        self._finished(now)

    def _leave(self, job: JobHandle) -> None:
        self.active.remove(job)
        self._left_progress += job.record.progress

    def _finished(self, now: float) -> None:
        done = self._completed + len(self.abandoned)
        total = len(self.workload.jobs)
        if self.on_progress is not None:
            self.on_progress(done, total, now)
        if done == total and not self._done.triggered:
            self._done.succeed()
