"""One live job: a real worker group driven by the engine's assignments.

States: ``waiting`` (no slots), ``pending`` (slots assigned, waiting for the
cores' previous holders to exit), ``starting`` (launched, no step yet),
``running``, ``stopping`` (checkpointing to resize or preempt), ``verifying``
(target reached; re-evaluated in a fresh process, cores still held), ``done``
and ``failed``. A new allocation restarts the group from its checkpoint with
the new workers and batch; a new batch on the same workers is applied in
place at a step boundary. What the workers report (per-step times, gradient
statistics, progress, validations) goes into the job's record, the same
record a modeled job fills.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coadapt.backends.live.services import LiveServices
from coadapt.engine.observations import key
from coadapt.engine.record import JobRecord
from coadapt.eventlog.tail import EventTail
from coadapt.jobs.checkpoint import CKPT_FILE
from coadapt.jobs.group import Group, GroupResult, RunConfig
from coadapt.models.batching import step_with_accum
from coadapt.models.goodput import gain
from coadapt.policies.base import Assignment

log = logging.getLogger(__name__)

EVENTS_FILE = "events.jsonl"


@dataclass
class LaunchState:
    """What one launch of the group has shown so far."""

    group: Group
    wall0: float  # wall time of the job's first start (worker event times count from it)
    nodes: int
    started_at: float  # experiment time of the launch
    first_step_at: float | None = None


@dataclass
class LiveJob:
    """One job's group and what it has reported; ``services`` is what it may ask
    of its backend (settings, cores, clock, log, completion), not the backend."""

    record: JobRecord
    services: LiveServices
    dir: Path
    state: str = "waiting"
    launch: LaunchState | None = None
    launches: int = 0
    failures: int = 0
    validations: int = 0
    metric: float | None = None
    checkpoint_progress: float = 0.0
    last_failure: str = ""
    recent: list[tuple[float, float]] = field(default_factory=list)  # (t, progress)
    skip_until_step: int = 0  # run_step up to which step times are warm-up
    bad_events: int = 0  # malformed worker events skipped
    _tail: EventTail | None = None
    _needs_resume_event: bool = False

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def events_path(self) -> Path:
        return self.dir / EVENTS_FILE

    def __post_init__(self) -> None:
        self._tail = EventTail(self.events_path)

    # ------------------------------------------------------ the handle protocol
    def sync(self, now: float) -> None:
        self.poll(now)
        self.record.accrue(now)
        self.record.obs.refit(now)
        self.record.restoring = self.state in ("stopping", "pending", "starting")

    def apply(self, a: Assignment, now: float) -> bool:
        r = self.record
        current = r.allocation or (0,) * len(a.allocation)
        if a.allocation != current and self.state == "verifying":
            # The job only finishes (cores held until it exits, as the policy's
            # next holder will find); no group is relaunched, so no restart.
            r.accrue(now)
            r.allocation = a.allocation if sum(a.allocation) else ()
            return True
        if a.allocation != current:
            r.accrue(now)
            r.set_allocation(a.allocation if sum(a.allocation) else ())
            r.adaptive = a.adaptive
            if r.replicas:
                r.choose_batch(a.batch_size)
            self._reconfigure()
            return True
        if r.replicas and a.adaptive and self.state == "running":
            old = (r.micro, r.accum)
            r.choose_batch(a.batch_size)
            if (r.micro, r.accum) != old:
                self._rebatch()
        return False

    def oracle(self) -> None:
        return None  # a live job has no ground truth to reveal

    # ---------------------------------------------------------------- control
    def _reconfigure(self) -> None:
        """Act on a changed allocation: stop a running group (it checkpoints);
        the next launch waits for cores."""
        if self.state in ("starting", "running"):
            assert self.launch is not None
            self.launch.group.request_stop()
            self.state = "stopping"
        elif self.state in ("waiting", "pending"):
            self.state = "pending" if self.record.replicas else "waiting"
        # stopping: decided when the group has exited; verifying: the job is done

    def _rebatch(self) -> None:
        assert self.launch is not None
        self.launch.group.set_batch(self.record.batch_size)

    def stop(self) -> None:
        """Graceful stop for shutdown: checkpoint and exit, no relaunch."""
        if self.launch is not None and self.state in ("starting", "running", "stopping"):
            self.launch.group.request_stop()
            self.state = "stopping"

    def kill(self) -> None:
        if self.launch is not None:
            self.launch.group.kill()

    @property
    def has_processes(self) -> bool:
        return self.state in ("starting", "running", "stopping", "verifying")

    # ---------------------------------------------------------------- polling
    def poll(self, now: float) -> None:
        """Read new worker events, notice the group's end, launch when cores are free."""
        if self.launch is not None:
            self._read_events()
            group = self.launch.group
            res = group.poll()
            if res is None and self.state != "verifying" and group.verifying:
                self.state = "verifying"
            if res is not None:
                self._read_events()
                # The engine's realtime clock lags the wall clock by up to a
                # poll; worker events are placed on the wall clock, so is this.
                self._ended(res, max(now, self.services.now()))
        if self.state == "pending" and not self.services.interrupting():
            self._try_launch(now)

    def _try_launch(self, now: float) -> None:
        r = self.record
        cores = self.services.pool.claim(self.name, r.allocation)
        if cores is None:
            return
        s = self.services.settings
        app = r.spec.application
        resume = (self.dir / CKPT_FILE).exists()
        cfg = RunConfig(
            job_type=app, workers=r.replicas, batch_size=r.batch_size, ckpt_dir=self.dir,
            resume=resume, events=self.events_path, job_id=self.name, seed=s.seed,
            target=s.targets.get(app), eval_every=s.eval_every.get(app), verify=True,
            cores=cores, worker_timeout=s.worker_timeout, exit_grace=s.exit_grace,
            endpoints=self.services.endpoints(cores), network=self.services.network,
            recipes=self.services.recipes(cores))
        try:
            group = Group(cfg).start()
        except (ValueError, OSError) as exc:  # a bad launch fails this job, not the run
            self.services.pool.release(self.name)
            self._failed(now, f"launch failed: {exc}", [])
            return
        assert group.meta is not None
        self.launches += 1
        self.launch = LaunchState(group, float(group.meta["first_start_wall"]), len(r.placement),
                                  now)
        self.state = "starting"
        self.recent.clear()
        if self._needs_resume_event:
            self.services.emit(now, "resume", self.name, reason=self.last_failure,
                               launch=self.launches, from_progress=self.checkpoint_progress,
                               lost_progress=max(r.progress - self.checkpoint_progress, 0.0),
                               workers=r.replicas, batch=r.batch_size, cores=list(cores))
            r.progress = self.checkpoint_progress
            self._needs_resume_event = False
        log.info("%s: launch %d on cores %s, %d workers, batch %d%s", self.name, self.launches,
                 cores, r.replicas, r.batch_size, " (resumed)" if resume else "")

    def _ended(self, res: GroupResult, now: float) -> None:
        self.services.pool.release(self.name)
        r = self.record
        if res.status == "complete" and res.verified:
            self.state = "done"
            self.services.complete(self, now, epoch=self.validations, metric=res.metric,
                                   verified=True, simulated=False, samples=res.samples,
                                   steps=res.step, launches=self.launches)
            self.launch = None
            return
        if res.status in ("preempted", "time_limit", "max_steps"):
            self.checkpoint_progress = res.progress
            r.progress = res.progress
            self.state = "pending" if r.replicas else "waiting"
            self.launch = None
            return
        self._failed(now, res.message or f"status {res.status}, verified {res.verified}",
                     res.worker_exit_codes)

    def _failed(self, now: float, reason: str, exit_codes: list) -> None:
        """Relaunch from the last checkpoint, or give up after max_retries."""
        r = self.record
        self.failures += 1
        self.last_failure = reason
        fatal = self.failures > self.services.settings.max_retries
        log.warning("%s failed (%s); %s", self.name, reason,
                    "giving up" if fatal else "relaunching from its last checkpoint")
        self.launch = None
        if fatal:
            self.state = "failed"
            self.services.abandon(self, now, f"{reason} ({self.failures} failures)")
            return
        self.services.emit(now, "fail", self.name, reason=reason, failures=self.failures,
                           fatal=False, exit_codes=exit_codes,
                           progress=r.progress, checkpoint_progress=self.checkpoint_progress)
        self._needs_resume_event = True
        self.state = "pending" if r.replicas else "waiting"

    def replay(self) -> None:
        """Rebuild observations, progress and validations from the job's own
        events (a resumed run), without logging them again."""
        self.validations = 0
        self._read_events(quiet=True)
        self.record.progress = self.checkpoint_progress

    def _read_events(self, *, quiet: bool = False) -> None:
        """Ingest new worker events; one that lacks a field or holds a wrong
        type is skipped with a warning naming the file, not the end of the run."""
        for e in self._tail.read():
            try:
                self._ingest(e, quiet=quiet)
            except (KeyError, TypeError, ValueError) as exc:
                self.bad_events += 1
                if self.bad_events <= 3:
                    log.warning("%s: skipped a malformed worker event (%s: %s): %.200s",
                                self.events_path, type(exc).__name__, exc, e)

    # ---------------------------------------------------------------- events
    def _t(self, e: dict[str, Any]) -> float:
        """A worker event's time on the experiment clock."""
        assert self.launch is not None
        return float(e["t"]) + self.launch.wall0 - self.services.wall0()

    def _ingest(self, e: dict[str, Any], *, quiet: bool = False) -> None:
        kind = e.get("kind")
        if kind == "observation":
            self._observation(e, quiet)
        elif kind == "validation":
            self.validations += 1
            self.metric = e.get("metric")
            if not quiet:
                self._validated(e)
        elif kind == "checkpoint":
            self.checkpoint_progress = float(e.get("progress", self.checkpoint_progress))
        elif kind == "progress" and e.get("reason") == "rebatch":
            # The first steps at a new batch pay for new buffer sizes: warm-up again.
            self.skip_until_step = int(e.get("run_step", 0)) + 2
            if not quiet:
                r = self.record
                self.services.emit(self._t(e), "progress", self.name, batch=e["batch_size"],
                                   micro=e["local_bsz"], accum=e["accum_steps"],
                                   epoch=self.validations, progress=e.get("progress"),
                                   **self._goodput(e["batch_size"], r.obs.value(self._key(e))
                                                   if self._key(e) in r.obs.configurations
                                                   else None))

    def _key(self, e: dict[str, Any]) -> tuple[int, int, int]:
        nodes = self.launch.nodes if self.launch is not None else max(len(self.record.placement), 1)
        return key(nodes, e["workers"], e["local_bsz"])

    def _observation(self, e: dict[str, Any], quiet: bool) -> None:
        r = self.record
        launch = self.launch
        r.progress = float(e["progress"])
        t = self._t(e) if launch is not None else 0.0
        self.recent.append((t, r.progress))
        del self.recent[:-50]
        sqr, var = e.get("grad_sqr"), e.get("grad_var")
        if sqr is not None and var is not None and sqr > 0 and var >= 0:
            r.obs.set_grad(float(sqr), float(var))
        run_step = int(e.get("run_step", 0))
        if run_step == 1:
            self.skip_until_step = self.services.settings.warmup_steps
        if launch is not None and launch.first_step_at is None:
            launch.first_step_at = t
            self.state = "running" if self.state == "starting" else self.state
            if not quiet:
                self.services.emit(t, "start", self.name, batch=e["batch_size"],
                                   micro=e["local_bsz"], accum=e["accum_steps"],
                                   workers=e["workers"], progress=r.progress,
                                   launch=self.launches, startup_s=t - launch.started_at,
                                   epoch=self.validations)
        if run_step <= self.skip_until_step:
            return
        step, sync, accum = float(e["step_time"]), float(e["sync_time"]), int(e["accum_steps"])
        r.obs.record(self._key(e), sync + (step - sync) / (accum + 1), sync)

    def _validated(self, e: dict[str, Any]) -> None:
        r = self.record
        value = r.obs.value(r.obs_key) if r.obs_key in r.obs.configurations else None
        self.services.emit(self._t(e), "epoch", self.name, epoch=self.validations,
                           progress=e.get("progress"), batch=r.batch_size, micro=r.micro,
                           accum=r.accum, metric=e.get("metric"), eval_time=e.get("eval_time"),
                           **self._goodput(r.batch_size, value))
        if r.adaptive and self.state == "running" and not e.get("reached"):
            old = (r.micro, r.accum)
            r.choose_batch(None)  # the agent re-tunes at each validation, as the simulator's
            if (r.micro, r.accum) != old:  # jobs do at each epoch boundary
                self._rebatch()

    def _goodput(self, batch: int, value: tuple[float, float] | None) -> dict[str, float]:
        """Measured throughput x estimated efficiency, for the goodput timeline."""
        r = self.record
        g = r.obs.grad
        if value is None or g is None:
            return {}
        step, sync = value
        total = step_with_accum(step, sync, r.accum)
        m0 = r.limits.init_batch_size
        eff = float(gain(g.sqr, g.var, batch / m0)) * m0 / batch
        return {"step_time": step, "sync_time": sync, "throughput": batch / total,
                "efficiency": eff, "goodput": batch / total * eff,
                "grad_sqr": g.sqr, "grad_var": g.var}

    # ---------------------------------------------------------------- status
    def rate(self) -> float | None:
        """Progress per second over the recent steps of this launch."""
        if len(self.recent) < 2:
            return None
        (t0, p0), (t1, p1) = self.recent[0], self.recent[-1]
        return (p1 - p0) / (t1 - t0) if t1 > t0 else None

    def status(self, now: float) -> dict[str, Any]:
        r = self.record
        return {"job": self.name, "type": r.spec.application, "state": self.state,
                "workers": r.replicas, "batch": r.batch_size, "progress": r.progress,
                "metric": self.metric,
                "rate": self.rate() if self.state == "running" else None,
                "launches": self.launches,
                "wall": time.time()}
