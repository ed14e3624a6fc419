"""A group of K worker processes running one job: launch, supervise, stop, verify.

``Group`` is non-blocking (``poll()``), for a scheduler loop; ``run_group`` is the
blocking form that also turns SIGTERM/SIGINT into a graceful stop. The parent
owns the group: if a worker dies the rest are killed; if the parent dies the
kernel kills the workers (PDEATHSIG).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from coadapt.eventlog import EventLog
from coadapt.jobs.checkpoint import (
    CKPT_FILE,
    JOB_FILE,
    STATUS_FILE,
    atomic_write_json,
    read_json,
    remove_stale_temps,
)
from coadapt.jobs.procs import free_port, preexec_worker, set_pdeathsig
from coadapt.jobs.registry import get_job_type
from coadapt.jobs.spec import SPEC_ENV, WorkerSpec
from coadapt.jobs.types import ConfigError, plan_batch

log = logging.getLogger(__name__)

THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class RunConfig:
    """One launch of a job. ``target``/``eval_every`` override the job type's (tests,
    profiling); ``timeout`` bounds this launch's wall time (then it fails);
    ``stop_after`` is a soft bound: past it the group checkpoints and stops
    gracefully, status ``time_limit`` (a profiler's time budget)."""

    job_type: str
    workers: int
    batch_size: int
    ckpt_dir: str | Path
    resume: bool = False
    events: str | Path | None = None
    job_id: str | None = None
    seed: int = 0
    max_steps: int | None = None
    target: float | None = None
    eval_every: float | None = None
    verify: bool = True
    timeout: float | None = None
    stop_after: float | None = None
    exit_grace: float = 60.0


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


def _preexec_verify() -> None:
    set_pdeathsig(signal.SIGKILL)


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
        self.plan = plan_batch(self.job, cfg.workers, cfg.batch_size)
        if cfg.max_steps is not None and cfg.max_steps < 1:
            raise ConfigError("max-steps", f"must be at least 1 (got {cfg.max_steps})")
        self.dir = Path(cfg.ckpt_dir)
        meta = read_json(self.dir / JOB_FILE) if self.dir.exists() else None
        if not cfg.resume and (self.dir / CKPT_FILE).exists():
            raise ConfigError("ckpt", f"{self.dir} already holds a checkpoint; pass --resume "
                              "to continue that job or choose an empty directory")
        if meta is not None and meta["job_type"] != cfg.job_type:
            raise ConfigError("type", f"{self.dir} belongs to job type {meta['job_type']!r}, "
                              f"not {cfg.job_type!r}")
        self.meta = meta
        self.job_id: str = cfg.job_id or (meta or {}).get("job_id") or cfg.job_type
        self.events: EventLog | None = None
        self.started = time.monotonic()
        self.procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []
        self._stop_requested = False
        self._stop_sent = False
        self._time_limited = False
        self._verify: subprocess.Popen[bytes] | None = None
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
        if self.job.prepare is not None:
            self.job.prepare()
        now = time.time()
        if self.meta is None:
            self.meta = {"job_type": cfg.job_type, "job_id": cfg.job_id or cfg.job_type,
                         "seed": cfg.seed, "first_start_wall": now, "launches": 0}
        elif cfg.seed != self.meta["seed"]:
            log.warning("resuming with the job's original seed %s (not %s): the data order "
                        "depends on it", self.meta["seed"], cfg.seed)
        self.meta["launches"] += 1
        atomic_write_json(self.dir / JOB_FILE, self.meta)
        self.job_id = cfg.job_id or self.meta["job_id"]
        self.events = EventLog(cfg.events, fsync=True) if cfg.events else None
        spec = WorkerSpec(
            job_type=cfg.job_type, job_id=self.job_id, ckpt_dir=str(self.dir.resolve()),
            events=str(Path(cfg.events).resolve()) if cfg.events else None,
            workers=cfg.workers, batch_size=cfg.batch_size, seed=self.meta["seed"],
            resume=cfg.resume, parent_pid=os.getpid(), max_steps=cfg.max_steps,
            target=cfg.target, eval_every=cfg.eval_every)
        port = free_port()
        self.started = time.monotonic()
        for rank in range(cfg.workers):
            env = {**os.environ, **THREAD_ENV, SPEC_ENV: spec.to_json(),
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                   "WORLD_SIZE": str(cfg.workers), "RANK": str(rank), "LOCAL_RANK": str(rank),
                   "GLOO_SOCKET_IFNAME": "lo", "PYTHONUNBUFFERED": "1"}
            fh = open(self.dir / "logs" / f"worker-{rank}.log", "ab")  # noqa: SIM115
            self._logs.append(fh)
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "coadapt.jobs.worker"], env=env, stdin=subprocess.DEVNULL,
                stdout=fh, stderr=subprocess.STDOUT, preexec_fn=preexec_worker,
                start_new_session=True))
        kind = "start" if self.meta["launches"] == 1 else "restart"
        self._emit(kind, job_type=cfg.job_type, workers=cfg.workers,
                   batch_size=plan.batch_size, local_bsz=plan.local_bsz,
                   accum_steps=plan.accum_steps, launch=self.meta["launches"],
                   seed=self.meta["seed"], pids=self.pids, wall=now)
        log.info("%s %s: %d workers, batch %d (local %d x %d micro-steps), pids %s", kind,
                 self.job_id, cfg.workers, plan.batch_size, plan.local_bsz,
                 plan.accum_steps + 1, self.pids)
        return self

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def _emit(self, kind: str, **fields: Any) -> None:
        if self.events is not None:
            t = time.time() - float(self.meta["first_start_wall"]) if self.meta else 0.0
            self.events.emit(t, kind, self.job_id, **fields)

    # ------------------------------------------------------------------ control
    def request_stop(self) -> None:
        """Graceful stop: workers checkpoint at the next step boundary and exit 0."""
        self._stop_requested = True
        self.wake.set()

    def kill(self) -> None:
        """SIGKILL every worker still running (by pid) and reap them."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait()
        if self._verify is not None and self._verify.poll() is None:
            self._verify.kill()
            self._verify.wait()

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
            self._verify = subprocess.Popen(
                [sys.executable, "-m", "coadapt.jobs.verify", str(self.dir), "--json"],
                env={**os.environ, **THREAD_ENV}, stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL, preexec_fn=_preexec_verify)
            return None
        return self._finish(verified=None, metric=self._status["metric"])

    def _poll_verify(self) -> GroupResult | None:
        assert self._verify is not None
        if self._verify.poll() is None:
            return None
        out = self._verify.communicate()[0].decode().strip().splitlines()
        try:
            res = json.loads(out[-1])
            return self._finish(verified=bool(res["reached"]), metric=float(res["metric"]))
        except (IndexError, ValueError, KeyError):
            return self._finish(verified=False, metric=None,
                                message=f"verify exited {self._verify.returncode}")

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
