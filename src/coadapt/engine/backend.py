"""The seam between the scheduling loop and the jobs it schedules.

The engine owns arrivals, rounds and the decision-level events (submit,
allocate, round, complete, end). A backend owns what a job does between
rounds: a modeled job advances by its profile on SimPy timers; a live job is a
real process group polled on the wall clock. Both keep a ``JobRecord`` that
the engine turns into the policy's view, and both report completion back
through ``EngineContext.complete``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import simpy

from coadapt.engine.record import JobRecord
from coadapt.eventlog import EventLog
from coadapt.models.batching import JobLimits
from coadapt.policies.base import Assignment, Oracle
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import JobSpec


class EngineContext(Protocol):
    """What a backend may use of the engine."""

    env: simpy.Environment
    log: EventLog
    cluster: ClusterSpec

    def complete(self, job: JobHandle, now: float, **fields: Any) -> None: ...

    def abandon(self, job: JobHandle, now: float, reason: str) -> None: ...


class JobHandle(Protocol):
    record: JobRecord

    def sync(self, now: float) -> None:
        """Take in what the job did up to ``now`` (progress, observations)."""

    def apply(self, assignment: Assignment, now: float) -> bool:
        """Act on the policy's assignment; True when the allocation changed
        (the engine then logs ``allocate``)."""

    def oracle(self) -> Oracle | None:
        """Ground truth, only for policies explicitly named oracles."""


class Backend(Protocol):
    mode: ClassVar[str]  # "simulate" or "live", recorded in the log header

    def bind(self, ctx: EngineContext) -> None:
        """Called once before the clock starts (a backend may start processes)."""

    def create(self, spec: JobSpec, limits: JobLimits, now: float) -> JobHandle:
        """A job was submitted."""

    def close(self) -> None:
        """The run ended (or was interrupted): release every job."""
