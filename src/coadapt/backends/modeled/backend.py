"""The modeled job backend: jobs advance by their profiles on SimPy timers.

Per job, a timer fires when its restart delay ends (``start``) and at each
epoch boundary (``epoch``; the last one completes the job). Between timers
every rate is constant, so nothing ticks.

Given measured live costs (``world.costs``), a job pays what a live job pays:
its measured first start and restarts instead of one fixed delay, a pause
per validation, the final validation and the fresh-process verification
before it completes (slots held), and the measured slowdown while another
job shares its node. Without them (e.g. the Pollux GPU traces) it pays the
fixed restart delay only, as the reference simulator does.

With ``observation_noise`` S > 0 each job's reports carry the log-normal
error of :class:`coadapt.backends.modeled.job.ReportNoise`, seeded by ``seed`` and the job
name; the truth its progress follows is the same as with S = 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from functools import partial
from typing import ClassVar

from coadapt.backends.modeled.job import ModeledJob, ReportNoise, check_observation_noise
from coadapt.backends.modeled.services import ModeledServices
from coadapt.engine.backend import EngineContext
from coadapt.engine.record import JobRecord
from coadapt.models.batching import JobLimits
from coadapt.world.workload import JobSpec
from coadapt.world.world import World


class ModeledBackend:
    """The engine's ``Backend`` for modeled jobs in a run's ``World`` (whose
    truths it charges; it builds none). Each job gets a
    :class:`~coadapt.backends.modeled.services.ModeledServices` (restart delay,
    start timer, in-place rebatch, neighbour change), never the backend."""

    mode: ClassVar[str] = "simulate"

    def __init__(self, world: World, restart_delay: float,
                 script: Mapping[str, list[tuple[float, int]]] | None = None, *,
                 observation_noise: float = 0.0, seed: int = 0) -> None:
        self.world = world  # profiles, costs, truths and efficiency truth of the run
        self.costs = world.costs
        self.observation_noise = check_observation_noise(observation_noise)
        self.seed = seed
        self.delay = restart_delay
        self.script = script or {}  # recorded in-place batch changes (a replay)
        self.jobs: list[ModeledJob] = []
        self._live: dict[int, ModeledJob] = {}
        self.ctx: EngineContext | None = None
        self._recheck = False
        self.services = ModeledServices(self.restart_delay, self.start_after, self.rebatched,
                                        self.neighbours_changed)

    def bind(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    @functools.cached_property
    def _node_kinds(self) -> tuple[str, ...]:
        """Every node's kind, one tuple shared by every job's record."""
        return tuple(n.kind for n in self.world.cluster.nodes)

    def create(self, spec: JobSpec, limits: JobLimits, now: float) -> ModeledJob:
        app = spec.application
        profile = self.world.profiles[app]
        noise = ReportNoise.for_job(self.observation_noise, profile.spread, self.seed, spec.name)
        job = ModeledJob(JobRecord.new(spec, limits, now, self._node_kinds), profile,
                         partial(self.world.truth, app),
                         services=self.services, efficiency=self.world.efficiency(app),
                         noise=noise)
        self.jobs.append(job)
        self._live[id(job)] = job  # unfinished jobs, in creation order
        return job

    def close(self) -> None:
        pass

    # ----------------------------------------------------------------- costs
    def restart_delay(self, record: JobRecord) -> float:
        """Seconds without progress after a (re)allocation."""
        if self.costs is None:
            study = self.world.study
            return study.rescale_s.get(record.spec.application, self.delay) if study else self.delay
        return self.costs.launch(record.spec.application, record.replicas,
                                 restart=record.restarts > 0)

    def _colocation(self, job: ModeledJob,
                    occupants: Mapping[int, list[ModeledJob]] | None = None) -> float:
        """The job's step-time factor from the running jobs that share a node
        with it: those of ``occupants`` (per node, built once per round) or
        found among the unfinished jobs (not every job that ever ran)."""
        if self.costs is None:
            return 1.0
        mine = job.record.nodes_used  # the nodes it holds, not an entry per node
        if occupants is not None:
            others = [o.record.spec.application for n in mine for o in occupants.get(n, ())
                      if o is not job]
        else:  # a job holding nothing uses no node
            held = set(mine)
            others = [o.record.spec.application for o in self._live.values()
                      if o is not job and not held.isdisjoint(o.record.nodes_used)]
        return self.costs.colocation(job.record.spec.application, others)

    def _occupants(self) -> dict[int, list[ModeledJob]]:
        """Per node that has any, the unfinished jobs holding slots on it."""
        occ: dict[int, list[ModeledJob]] = {}
        for o in self._live.values():
            for n in o.record.nodes_used:  # none for a job holding nothing
                occ.setdefault(n, []).append(o)
        return occ

    def neighbours_changed(self) -> None:
        """Allocations changed: re-rate co-located jobs once the round is applied."""
        if self.costs is None or self._recheck:
            return
        self._recheck = True
        self.ctx.env.timeout(0).callbacks.append(lambda _ev: self._recolocate())

    def _recolocate(self) -> None:
        self._recheck = False
        now = self.ctx.env.now
        occupants = self._occupants()
        for job in list(self._live.values()):
            r = job.record
            if r.completed_at is not None or job.finishing or not r.replicas or job.rate <= 0:
                continue
            factor = self._colocation(job, occupants)
            if factor != job.factor:
                job.advance(now)
                job.factor = factor
                job.version += 1
                job.observe(now)
                self.after(job, job.time_to_boundary(now), self.on_boundary)

    # ---------------------------------------------------------------- timers
    def after(self, job: ModeledJob, delay: float, fn: Callable[[ModeledJob, int], None]) -> None:
        """Call ``fn(job, version)`` after ``delay``; it ignores a stale version."""
        version = job.version
        ev = self.ctx.env.timeout(max(delay, 0.0))
        ev.callbacks.append(lambda _ev: fn(job, version))

    def start_after(self, job: ModeledJob, delay: float) -> None:
        """The job's (re)start, once its restart delay has passed."""
        self.after(job, delay, self.on_start)

    def on_start(self, job: ModeledJob, version: int) -> None:
        if version != job.version:
            return
        now = self.ctx.env.now
        job.advance(now)
        job.factor = self._colocation(job)
        obs = job.observe(now)
        self.ctx.log.emit(now, "start", job.name, batch=job.record.batch_size, epoch=job.epoch,
                          progress=job.record.progress, truth=job.truth.kind(job.record.placement),
                          **obs)
        self.after(job, job.time_to_boundary(now), self.on_boundary)
        launch = job.launch
        script = self.script.get(job.name, ())
        before = [b for t, b in script if job.allocated_at < t <= now]
        if before:  # recorded while this launch was still starting (it started sooner live)
            self._scripted(job, launch, before[-1])
        for t, batch in script:
            if t > now:
                ev = self.ctx.env.timeout(t - now)
                ev.callbacks.append(lambda _ev, b=batch: self._scripted(job, launch, b))

    def _scripted(self, job: ModeledJob, launch: int, batch: int) -> None:
        """A recorded in-place batch change, if the job still runs that launch
        (deferred to the end of a validation pause)."""
        now = self.ctx.env.now
        r = job.record
        if launch != job.launch or job.finishing or not r.replicas:
            return
        if now < job.run_from:
            ev = self.ctx.env.timeout(job.run_from - now)
            ev.callbacks.append(lambda _ev: self._scripted(job, launch, batch))
            return
        old = (r.micro, r.accum)
        r.choose_batch(batch)
        if (r.micro, r.accum) != old:
            job.advance(now)
            job.version += 1
            self.rebatched(job, now)

    def rebatched(self, job: ModeledJob, now: float) -> None:
        """The batch changed in place (no restart)."""
        r = job.record
        obs = job.observe(now)
        self.ctx.log.emit(now, "progress", job.name, batch=r.batch_size, micro=r.micro,
                          accum=r.accum, epoch=job.epoch, progress=r.progress, **obs)
        self.after(job, job.time_to_boundary(now), self.on_boundary)

    def on_boundary(self, job: ModeledJob, version: int) -> None:
        if version != job.version:
            return
        now = self.ctx.env.now
        job.advance(now)
        r = job.record
        app, k = r.spec.application, r.replicas
        pause = self.costs.eval(app, k) if self.costs is not None else 0.0
        if job.finish_epoch():
            job.version += 1
            job.rate = 0.0
            job.finishing = True
            job.final_metric = job.metric()
            hold = pause + (self.costs.finish(app) if self.costs is not None else 0.0)
            if hold > 0:
                self.after(job, hold, self._finish)
            else:
                self._finish(job, job.version)
            return
        job.version += 1
        if r.adaptive:
            r.choose_batch(None)
        job.run_from = now + pause
        obs = job.observe(now)
        self.ctx.log.emit(now, "epoch", job.name, epoch=job.epoch, progress=r.progress,
                          batch=r.batch_size, micro=r.micro, accum=r.accum, metric=job.metric(),
                          **obs)
        self.after(job, job.time_to_boundary(now), self.on_boundary)

    def _finish(self, job: ModeledJob, version: int) -> None:
        if version != job.version:
            return
        self.ctx.complete(job, self.ctx.env.now, epoch=job.epoch, metric=job.final_metric,
                          verified=None, simulated=True)
        self._live.pop(id(job), None)
        self.neighbours_changed()
