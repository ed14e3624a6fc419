"""The live job backend: real worker groups on real cores, polled on the wall clock.

A SimPy process polls every job every ``poll`` seconds (new worker events,
group exits, launches waiting for cores) and refreshes the status table. The
experiment clock is the realtime environment's; worker events carry wall
times relative to their job's first start and are translated onto it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from coadapt.backends.live.cores import CorePool
from coadapt.backends.live.job import LiveJob
from coadapt.backends.live.services import LiveServices, LiveSettings
from coadapt.engine.backend import EngineContext, JobHandle
from coadapt.engine.record import JobRecord
from coadapt.jobs.launch import WorkerRecipe
from coadapt.jobs.netns import Endpoint
from coadapt.models.batching import JobLimits
from coadapt.ui.status import StatusTable
from coadapt.util.paths import inside
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import JobSpec

__all__ = ["LiveBackend", "LiveSettings", "RunInterrupted"]  # LiveSettings: re-exported

log = logging.getLogger(__name__)


class NodeRecipes(Protocol):
    """What a rank on a node's slot runs with (``backends.live.kinds.KindCgroups``)."""

    @property
    def emulated(self) -> bool: ...

    def recipe(self, node: int, slot: int) -> WorkerRecipe: ...


class RunInterrupted(Exception):
    """Ctrl-C or SIGTERM stopped the run; every group has checkpointed and exited."""


class LiveBackend:
    """The engine's ``Backend`` for live jobs. Each job gets a
    :class:`~coadapt.backends.live.services.LiveServices` (settings, cores, clock,
    event log, completion), never the backend itself."""

    mode: ClassVar[str] = "live"

    def __init__(self, out_dir: Path, cluster: ClusterSpec, settings: LiveSettings,
                 cores: list[int] | None = None, status: StatusTable | None = None,
                 nodes: Sequence[Endpoint] | None = None,
                 kinds: NodeRecipes | None = None) -> None:
        self.out_dir = out_dir
        self.cluster = cluster
        self.settings = settings
        self.pool = CorePool(cluster, cores)
        if nodes is not None and len(nodes) != cluster.num_nodes:
            raise ValueError(f"{len(nodes)} emulated nodes for a cluster of {cluster.num_nodes}")
        self.nodes = list(nodes) if nodes is not None else None
        self.kinds = kinds if kinds is not None and kinds.emulated else None
        self.network: dict[str, Any] = {"network": settings.network}
        if nodes is not None:
            self.network["bandwidth_gbps"] = cluster.network.bandwidth_gbps
        self.jobs: list[LiveJob] = []
        self.status = status
        self.ctx: EngineContext | None = None
        self.wall0 = time.time()  # wall time at experiment t = 0, set by bind()
        self.interrupting = False
        self.hard_stop = False
        self._interrupt_deadline: float | None = None
        self.services = LiveServices(
            settings, self.pool, self.network, wall0=lambda: self.wall0,
            interrupting=lambda: self.interrupting, now=self.now, endpoints=self.endpoints,
            emit=self.emit, complete=self.complete, abandon=self.abandon, recipes=self.recipes)

    def endpoints(self, cores: Sequence[int]) -> tuple[Endpoint, ...] | None:
        """Where each rank on ``cores`` runs: its core's emulated node (None: loopback)."""
        if self.nodes is None:
            return None
        return tuple(self.nodes[self.pool.node_of(c)] for c in cores)

    def recipes(self, cores: Sequence[int]) -> tuple[WorkerRecipe, ...] | None:
        """What each rank on ``cores`` runs with: its node kind's recipe (None: plain)."""
        if self.kinds is None:
            return None
        out = []
        for c in cores:
            node = self.pool.node_of(c)
            out.append(self.kinds.recipe(node, self.pool.nodes[node].index(c)))
        return tuple(out)

    # ------------------------------------------------------------ the protocol
    def bind(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        sync = getattr(ctx.env, "sync", None)
        if sync is not None:  # the realtime clock starts now, not when it was created
            sync()
        self.wall0 = time.time() - ctx.env.now
        ctx.env.process(self._poll_loop())

    def create(self, spec: JobSpec, limits: JobLimits, now: float) -> LiveJob:
        kinds = tuple(n.kind for n in self.cluster.nodes)
        job = LiveJob(JobRecord.new(spec, limits, now, kinds), self.services,
                      inside(self.out_dir / "jobs", spec.name))
        self.jobs.append(job)
        return job

    def adopt(self, job: LiveJob) -> None:
        self.jobs.append(job)

    def close(self) -> None:
        """Stop every group gracefully (checkpoint), kill what is left after
        ``stop_timeout``; never leaves a process behind."""
        self.interrupting = True  # no more launches
        deadline = time.monotonic() + self.settings.stop_timeout
        while True:
            alive = [j for j in self.jobs if j.has_processes]
            if not alive:
                break
            for j in alive:
                j.stop()  # idempotent; a verifying job finishes its verification
                j.poll(self.now())  # through the job: a verified completion is still logged
            if time.monotonic() > deadline:
                log.warning("groups still running %.0f s after the stop request: killing",
                            self.settings.stop_timeout)
                break
            time.sleep(0.1)
        self.kill_all()

    def kill_all(self) -> None:
        """Second signal: SIGKILL everything now; the poll loop ends the run."""
        self.hard_stop = True
        for j in self.jobs:
            j.kill()

    # ------------------------------------- clock, log, completion (LiveServices)
    def now(self) -> float:
        return time.time() - self.wall0

    def emit(self, t: float, kind: str, job: str | None, **fields: Any) -> None:
        assert self.ctx is not None
        self.ctx.log.emit(t, kind, job, **fields)

    def complete(self, job: JobHandle, now: float, **fields: Any) -> None:
        assert self.ctx is not None
        self.ctx.complete(job, now, **fields)

    def abandon(self, job: JobHandle, now: float, reason: str) -> None:
        assert self.ctx is not None
        self.ctx.abandon(job, now, reason)

    def round_info(self, now: float) -> dict[str, Any]:
        """How far the engine's clock lags the wall clock (logged per round)."""
        return {"lag_s": self.now() - now}

    # ------------------------------------------------------------ polling
    def interrupt(self) -> None:
        """First Ctrl-C/SIGTERM: every group checkpoints and stops; the poll
        loop raises RunInterrupted once all have exited."""
        if not self.interrupting:
            self.interrupting = True
            self._interrupt_deadline = time.monotonic() + self.settings.stop_timeout
            for j in self.jobs:
                j.stop()

    def _poll_loop(self):
        assert self.ctx is not None
        env = self.ctx.env
        while True:
            yield env.timeout(self.settings.poll)
            now = env.now
            for job in list(self.jobs):
                if job.state not in ("done", "failed"):
                    job.poll(now)
            if self.status is not None:
                self.status.update(now, [j.status(now) for j in self.jobs])
            if self.hard_stop:
                raise RunInterrupted()
            if self.interrupting:
                for j in self.jobs:
                    j.stop()  # also groups launched while the interrupt came in
                alive = [j for j in self.jobs if j.has_processes]
                if not alive:
                    raise RunInterrupted()
                if time.monotonic() > (self._interrupt_deadline or 0):
                    self.kill_all()
                    raise RunInterrupted()
