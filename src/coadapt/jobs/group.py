"""A group of K worker processes running one job: supervise, stop, end.

``Group`` is non-blocking (``poll()``), for a scheduler loop; ``run_group`` is the
blocking form that also turns SIGTERM/SIGINT into a graceful stop. The parent
owns the group: if a worker dies the rest are killed; if the parent dies the
kernel kills the workers (PDEATHSIG).

The parts live beside it: starting the processes (``launch``: settings, core
pinning, rendezvous), changing a running group's batch size in place
(``rebatch``, through ``control.json``) and checking a complete launch
(``verification``). ``RunConfig`` and ``THREAD_ENV`` are importable from here too.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from coadapt.eventlog import EventLog
from coadapt.jobs.checkpoint import STATUS_FILE, read_json, remove_stale_temps
from coadapt.jobs.launch import (
    THREAD_ENV,
    RunConfig,
    check_config,
    job_identity,
    launch_workers,
    record_launch,
    rendezvous_port,
)
from coadapt.jobs.rebatch import BatchControl
from coadapt.jobs.registry import get_job_type
from coadapt.jobs.spec import WorkerSpec
from coadapt.jobs.types import BatchPlan
from coadapt.jobs.verification import Verification

__all__ = ["THREAD_ENV", "Group", "GroupResult", "RunConfig", "run_group"]

log = logging.getLogger(__name__)


@dataclass
class GroupResult:
    """How a launch ended. status: complete | preempted | max_steps | time_limit | failed."""

    status: str
    exit_code: int
    step: int = 0
    progress: float = 0.0
    samples: int = 0
    metric: float | None = None
    verified: bool | None = None
    target: float | None = None
    wall_seconds: float = 0.0
    worker_exit_codes: list[int | None] = field(default_factory=list)
    message: str = ""


class Group:
    """One launch of a job's worker group.

    ``start()``, then ``poll()`` periodically (or ``wait()``); ``request_stop()``
    for a graceful stop (checkpoint, exit 0), ``kill()`` for a hard one. Config
    errors raise ConfigError from the constructor. The thread that calls
    ``start()`` must outlive the group: the workers' PDEATHSIG fires when the
    thread that forked them exits.
    """

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.job = get_job_type(cfg.job_type)
        self.control = BatchControl(self.job, cfg.workers, cfg.ckpt_dir, cfg.batch_size)
        self._cores = check_config(cfg)
        self.dir = Path(cfg.ckpt_dir)
        self.meta = job_identity(cfg)  # job.json: None until the first start()
        self.job_id: str = cfg.job_id or (self.meta or {}).get("job_id") or cfg.job_type
        self.events: EventLog | None = None
        self.started = time.monotonic()
        self.procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []
        self._stop_requested = False
        self._stop_sent = False
        self._time_limited = False
        self._verify: Verification | None = None
        self._status: dict[str, Any] | None = None
        self._result: GroupResult | None = None
        self._exited_ok_at: float | None = None
        self.wake = threading.Event()

    # ------------------------------------------------------------------ launch
    def start(self) -> Group:
        cfg, plan = self.cfg, self.plan
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        remove_stale_temps(self.dir)
        (self.dir / STATUS_FILE).unlink(missing_ok=True)
        self.control.clear()  # this launch runs cfg.batch_size
        if self.job.prepare is not None:
            self.job.prepare()
        now = time.time()
        self.meta = record_launch(cfg, self.meta, now)
        self.job_id = cfg.job_id or self.meta["job_id"]
        self.events = EventLog(cfg.events, fsync=True) if cfg.events else None
        spec = WorkerSpec(
            job_type=cfg.job_type, job_id=self.job_id, ckpt_dir=str(self.dir.resolve()),
            events=str(Path(cfg.events).resolve()) if cfg.events else None,
            workers=cfg.workers, batch_size=cfg.batch_size, seed=self.meta["seed"],
            resume=cfg.resume, parent_pid=os.getpid(), max_steps=cfg.max_steps,
            target=cfg.target, eval_every=cfg.eval_every, timeout_s=cfg.worker_timeout,
            launch=self.meta["launches"])
        ends = cfg.endpoints
        port = rendezvous_port(cfg)
        self.started = time.monotonic()
        try:
            launch_workers(cfg, spec, self._cores, port, self.dir / "logs", self.procs, self._logs)
        except BaseException:
            # Never leave the ranks already started waiting for a rendezvous.
            self.kill()
            self._close()
            raise
        kind = "start" if self.meta["launches"] == 1 else "restart"
        self._emit(kind, job_type=cfg.job_type, workers=cfg.workers,
                   batch_size=plan.batch_size, local_bsz=plan.micro,
                   accum_steps=plan.accum, launch=self.meta["launches"],
                   seed=self.meta["seed"], pids=self.pids, wall=now,
                   cores=list(self._cores) if self._cores is not None else None,
                   **(cfg.network or {"network": "loopback"}),
                   **({"addresses": [e.address for e in ends]} if ends else {}))
        log.info("%s %s: %d workers, batch %d (local %d x %d micro-steps), pids %s, cores %s",
                 kind, self.job_id, cfg.workers, plan.batch_size, plan.micro,
                 plan.accum + 1, self.pids, self._cores)
        return self

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    @property
    def verifying(self) -> bool:
        """The workers are done and the verifier re-evaluates the final checkpoint
        (the job's cores are still in use)."""
        return self._verify is not None and self._result is None

    @property
    def cores(self) -> tuple[int, ...] | None:
        """The cores the ranks are pinned to (rank i on ``cores[i]``), or None."""
        return self._cores

    @property
    def batch_size(self) -> int:
        """The batch size last requested of this launch (``cfg.batch_size`` until
        ``set_batch``), as asked: ``plan`` holds how it is split and actually run.
        The workers switch at their next step boundary, not at this call."""
        return self.control.batch

    @property
    def plan(self) -> BatchPlan:
        """How ``batch_size`` is split over the workers and actually run."""
        return self.control.plan

    def _emit(self, kind: str, **fields: Any) -> None:
        if self.events is not None:
            t = time.time() - float(self.meta["first_start_wall"]) if self.meta else 0.0
            self.events.emit(t, kind, self.job_id, **fields)

    # ------------------------------------------------------------------ control
    def request_stop(self) -> None:
        """Graceful stop: workers checkpoint at the next step boundary and exit 0."""
        self._stop_requested = True
        self.wake.set()

    def set_batch(self, batch_size: int) -> BatchPlan:
        """Ask the running workers to switch to ``batch_size`` at their next step
        boundary, without a restart (progress, optimizer and statistics carry on).

        Checked with ``plan_batch`` first (ConfigError, nothing written); then
        ``control.json`` is replaced atomically with {"batch_size", "seq",
        "launch"}, seq increasing per launch. Rank 0 reads it before its next
        step; that step's ``progress`` event (reason "rebatch") marks the switch.

        Once the workers are done (verifying or ended) the request is dropped
        with a log line, not an error: a scheduler reacting to the last events
        of a launch races with its end, and the next launch takes its batch from
        its RunConfig anyway. Returns the plan of the request.
        """
        if not self.procs:
            raise RuntimeError(f"job {self.job_id}: set_batch before start()")
        batch, plan = self.control.check(batch_size)
        if self._result is not None or self._verify is not None:
            log.info("job %s: batch %d not requested, the workers are done", self.job_id, batch)
            return plan
        assert self.meta is not None
        seq = self.control.send(batch, plan, launch=self.meta["launches"])
        log.info("job %s: batch %d requested (local %d x %d micro-steps), seq %d", self.job_id,
                 batch, plan.micro, plan.accum + 1, seq)
        return plan

    def kill(self, timeout: float = 5.0) -> None:
        """SIGKILL every worker and the verifier still running, then reap them.

        Idempotent, and safe from a signal handler: the reaping waits at most
        ``timeout`` seconds in all (a wait without a timeout could deadlock on
        Popen's internal lock if the handler interrupted this thread inside
        ``poll()``); a process not reaped by then is reaped by a later poll.
        """
        procs = [*self.procs, *([self._verify.proc] if self._verify is not None else [])]
        for p in procs:
            if p.returncode is None:
                p.kill()  # Popen checks for an already-reaped pid first
        deadline = time.monotonic() + timeout
        for p in procs:
            if p.returncode is not None:
                continue
            try:
                p.wait(timeout=max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                log.warning("job %s: pid %d not reaped %.1f s after SIGKILL", self.job_id,
                            p.pid, timeout)

    # ------------------------------------------------------------------ supervise
    def poll(self) -> GroupResult | None:
        """One supervision tick; returns the result once the launch has ended."""
        if self._result is not None:
            return self._result
        if self._verify is not None:
            return self._poll_verify()
        limit = self.cfg.stop_after
        if (limit is not None and not self._stop_requested
                and time.monotonic() - self.started > limit):
            self._time_limited = True
            self.request_stop()
        if self._stop_requested and not self._stop_sent:
            for p in self.procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            self._stop_sent = True
        codes = [p.poll() for p in self.procs]
        if any(c not in (None, 0) for c in codes):
            self.kill()
            return self._fail(f"a worker failed; exit codes {codes}")
        if self.cfg.timeout is not None and time.monotonic() - self.started > self.cfg.timeout:
            self.kill()
            return self._fail(f"timeout after {self.cfg.timeout:.0f} s")
        if any(c is None for c in codes):
            if any(c == 0 for c in codes):
                self._exited_ok_at = self._exited_ok_at or time.monotonic()
                if time.monotonic() - self._exited_ok_at > self.cfg.exit_grace:
                    self.kill()
                    return self._fail("some workers exited, others hung")
            return None
        self._status = read_json(self.dir / STATUS_FILE)
        if self._status is None:
            return self._fail("workers exited 0 without writing status.json")
        if self._status["status"] == "complete" and self.cfg.verify:
            err = open(self.dir / "logs" / "verify.log", "ab")  # noqa: SIM115
            self._logs.append(err)
            recipe = self.cfg.recipes[0] if self.cfg.recipes else None  # the kind of its node
            self._verify = Verification(self.dir, self._cores, err, recipe)
            return None
        return self._finish(verified=None, metric=self._status["metric"])

    def _poll_verify(self) -> GroupResult | None:
        assert self._verify is not None
        if self._verify.running():
            if self._verify.overdue(self.cfg.verify_timeout):
                self.kill()
                return self._fail(f"verification still running after "
                                  f"{self.cfg.verify_timeout:.0f} s (logs/verify.log)")
            return None
        verified, metric, message = self._verify.outcome()
        return self._finish(verified=verified, metric=metric, message=message)

    def _finish(self, verified: bool | None, metric: float | None,
                message: str = "") -> GroupResult:
        st = self._status or {}
        status = st["status"]
        if status == "preempted" and self._time_limited:
            status = "time_limit"
        code = 1 if verified is False else 0
        self._result = GroupResult(
            status=status, exit_code=code, step=st["step"], progress=st["progress"],
            samples=st["samples"], metric=metric, verified=verified, target=st["target"],
            wall_seconds=time.monotonic() - self.started,
            worker_exit_codes=[p.returncode for p in self.procs], message=message)
        if status == "complete":
            self._emit("complete", metric=metric, verified=verified,
                       train_metric=st["metric"], target=st["target"], step=st["step"],
                       progress=st["progress"], samples=st["samples"])
        self._close()
        return self._result

    def _fail(self, message: str) -> GroupResult:
        log.error("job %s failed: %s (logs in %s)", self.job_id, message, self.dir / "logs")
        self._emit("fail", reason=message, worker_exit_codes=[p.returncode for p in self.procs])
        self._result = GroupResult(status="failed", exit_code=1,
                                   wall_seconds=time.monotonic() - self.started,
                                   worker_exit_codes=[p.returncode for p in self.procs],
                                   message=message)
        self._close()
        return self._result

    def _close(self) -> None:
        for fh in self._logs:
            fh.close()
        if self.events is not None:
            self.events.close()

    def wait(self, interval: float = 0.05) -> GroupResult:
        while (res := self.poll()) is None:
            self.wake.wait(interval)
            self.wake.clear()
        return res


def run_group(cfg: RunConfig) -> GroupResult:
    """Launch the group and block until it ends. In the main thread, SIGTERM and
    SIGINT request a graceful stop (checkpoint, exit 0); a second SIGINT kills."""
    group = Group(cfg)
    main = threading.current_thread() is threading.main_thread()
    old: dict[int, Any] = {}
    if main:
        def on_signal(signum: int, frame: object) -> None:
            if signum == signal.SIGINT and group._stop_requested:
                group.kill()
            group.request_stop()

        for sig in (signal.SIGTERM, signal.SIGINT):
            old[sig] = signal.signal(sig, on_signal)
    try:
        group.start()
        return group.wait()
    except BaseException:
        group.kill()
        raise
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
