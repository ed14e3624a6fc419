"""A group of K worker processes running one job: launch, supervise, stop, verify.

``Group`` is non-blocking (``poll()``), for a scheduler loop; ``run_group`` is the
blocking form that also turns SIGTERM/SIGINT into a graceful stop. The parent
owns the group: if a worker dies the rest are killed; if the parent dies the
kernel kills the workers (PDEATHSIG).

A running group can change its batch size in place (``Group.set_batch``): the
request goes through ``control.json`` in the checkpoint directory and takes
effect at the same step boundary on every rank (``coadapt.jobs.loop``). A
control file left by an earlier launch never applies to a later one: ``start()``
deletes it, and each request names the launch it is for.
"""

from __future__ import annotations

import json
import logging
import operator
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from coadapt.eventlog import EventLog
from coadapt.jobs.checkpoint import (
    CKPT_FILE,
    CONTROL_FILE,
    JOB_FILE,
    STATUS_FILE,
    atomic_write_json,
    read_json,
    remove_stale_temps,
    write_control,
)
from coadapt.jobs.netns import Endpoint, free_port_in
from coadapt.jobs.procs import can_pin, free_port, helper_preexec, worker_preexec
from coadapt.jobs.registry import get_job_type
from coadapt.jobs.spec import SPEC_ENV, WorkerSpec
from coadapt.jobs.types import BatchPlan, ConfigError, plan_batch

log = logging.getLogger(__name__)

THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class RunConfig:
    """One launch of a job. ``target``/``eval_every`` override the job type's (tests,
    profiling); ``timeout`` bounds this launch's wall time (then it fails);
    ``stop_after`` is a soft bound: past it the group checkpoints and stops
    gracefully, status ``time_limit`` (a profiler's time budget).

    ``cores`` pins rank i to core ``cores[i]`` (and the verifier to all of them),
    so co-located jobs do not migrate onto each other's slots. ``worker_timeout``
    is the gloo timeout (rendezvous and every collective): how long a hung peer
    goes unnoticed. ``exit_grace``: how long the others may linger after one
    worker exited 0 before the group is failed. Live runs want both short.

    ``endpoints`` runs rank i in the network namespace of an emulated node
    (``coadapt.net``), the rendezvous at rank 0's node address; None: every
    rank on this machine's loopback. ``network`` describes it in the start
    event (e.g. {"network": "emulated", "bandwidth_gbps": 1})."""

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
    cores: tuple[int, ...] | None = None
    worker_timeout: float = 300.0
    verify_timeout: float = 300.0
    endpoints: tuple[Endpoint, ...] | None = None
    network: Mapping[str, Any] | None = None


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


def _check_cores(cores: tuple[int, ...] | None, workers: int) -> tuple[int, ...] | None:
    """The validated core list: one usable core per worker (a bad core would
    otherwise surface as an opaque preexec_fn failure in ``start()``)."""
    if cores is None:
        return None
    try:
        cores = tuple(operator.index(c) for c in cores)
    except TypeError:
        raise ConfigError("cores", f"must be integers (got {cores!r})") from None
    if len(cores) != workers:
        raise ConfigError("cores", f"needs one core per worker: {len(cores)} cores "
                          f"{list(cores)} for {workers} workers")
    if not can_pin():
        raise ConfigError("cores", "this platform cannot pin processes to cores")
    usable = os.sched_getaffinity(0)
    bad = sorted(set(cores) - usable)
    if bad:
        raise ConfigError("cores", f"{bad} not among this process's usable cores "
                          f"{sorted(usable)}")
    return cores


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
        self._cores = _check_cores(cfg.cores, cfg.workers)
        if cfg.endpoints is not None and len(cfg.endpoints) != cfg.workers:
            raise ConfigError("endpoints", f"needs one per worker: {len(cfg.endpoints)} for "
                              f"{cfg.workers} workers")
        if not cfg.worker_timeout > 0:
            raise ConfigError("worker-timeout", f"must be positive (got {cfg.worker_timeout})")
        if not cfg.exit_grace >= 0:
            raise ConfigError("exit-grace", f"must be at least 0 (got {cfg.exit_grace})")
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
        self._verify_started = 0.0
        self._status: dict[str, Any] | None = None
        self._result: GroupResult | None = None
        self._exited_ok_at: float | None = None
        self._batch = cfg.batch_size
        self._control_seq = 0
        self.wake = threading.Event()

    # ------------------------------------------------------------------ launch
    def start(self) -> Group:
        cfg, plan = self.cfg, self.plan
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        remove_stale_temps(self.dir)
        (self.dir / STATUS_FILE).unlink(missing_ok=True)
        # A batch request of an earlier launch is stale: this launch runs cfg.batch_size.
        (self.dir / CONTROL_FILE).unlink(missing_ok=True)
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
            target=cfg.target, eval_every=cfg.eval_every, timeout_s=cfg.worker_timeout,
            launch=self.meta["launches"])
        ends = cfg.endpoints
        port = free_port_in(ends[0].ns_path) if ends else free_port()
        self.started = time.monotonic()
        try:
            for rank in range(cfg.workers):
                env = {**os.environ, **THREAD_ENV, SPEC_ENV: spec.to_json(),
                       "MASTER_ADDR": ends[0].address if ends else "127.0.0.1",
                       "MASTER_PORT": str(port),
                       "WORLD_SIZE": str(cfg.workers), "RANK": str(rank),
                       "LOCAL_RANK": str(rank),
                       "GLOO_SOCKET_IFNAME": ends[rank].iface if ends else "lo",
                       "PYTHONUNBUFFERED": "1"}
                fh = open(self.dir / "logs" / f"worker-{rank}.log", "ab")  # noqa: SIM115
                self._logs.append(fh)
                core = self._cores[rank] if self._cores is not None else None
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "coadapt.jobs.worker"], env=env,
                    stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                    preexec_fn=worker_preexec(core, ends[rank].ns_path if ends else None),
                    start_new_session=True))
        except BaseException:
            # Never leave the ranks already started waiting for a rendezvous.
            self.kill()
            self._close()
            raise
        kind = "start" if self.meta["launches"] == 1 else "restart"
        self._emit(kind, job_type=cfg.job_type, workers=cfg.workers,
                   batch_size=plan.batch_size, local_bsz=plan.local_bsz,
                   accum_steps=plan.accum_steps, launch=self.meta["launches"],
                   seed=self.meta["seed"], pids=self.pids, wall=now,
                   cores=list(self._cores) if self._cores is not None else None,
                   **(cfg.network or {"network": "loopback"}),
                   **({"addresses": [e.address for e in ends]} if ends else {}))
        log.info("%s %s: %d workers, batch %d (local %d x %d micro-steps), pids %s, cores %s",
                 kind, self.job_id, cfg.workers, plan.batch_size, plan.local_bsz,
                 plan.accum_steps + 1, self.pids, self._cores)
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
        return self._batch

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
        try:
            batch = operator.index(batch_size)
        except TypeError:
            raise ConfigError("batch", f"must be an integer (got {batch_size!r})") from None
        plan = plan_batch(self.job, self.cfg.workers, batch)
        if self._result is not None or self._verify is not None:
            log.info("job %s: batch %d not requested, the workers are done", self.job_id, batch)
            return plan
        assert self.meta is not None
        self._control_seq += 1
        write_control(self.dir, batch_size=batch, seq=self._control_seq,
                      launch=self.meta["launches"])
        self._batch, self.plan = batch, plan
        log.info("job %s: batch %d requested (local %d x %d micro-steps), seq %d", self.job_id,
                 batch, plan.local_bsz, plan.accum_steps + 1, self._control_seq)
        return plan

    def kill(self, timeout: float = 5.0) -> None:
        """SIGKILL every worker and the verifier still running, then reap them.

        Idempotent, and safe from a signal handler: the reaping waits at most
        ``timeout`` seconds in all (a wait without a timeout could deadlock on
        Popen's internal lock if the handler interrupted this thread inside
        ``poll()``); a process not reaped by then is reaped by a later poll.
        """
        procs = [*self.procs, *([self._verify] if self._verify is not None else [])]
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
            self._verify = subprocess.Popen(
                [sys.executable, "-m", "coadapt.jobs.verify", str(self.dir), "--json"],
                env={**os.environ, **THREAD_ENV}, stdout=subprocess.PIPE, stderr=err,
                stdin=subprocess.DEVNULL, preexec_fn=helper_preexec(self._cores),
                start_new_session=True)  # a terminal's Ctrl-C is the parent's to handle
            self._verify_started = time.monotonic()
            return None
        return self._finish(verified=None, metric=self._status["metric"])

    def _poll_verify(self) -> GroupResult | None:
        assert self._verify is not None
        if self._verify.poll() is None:
            if time.monotonic() - self._verify_started > self.cfg.verify_timeout:
                self.kill()
                return self._fail(f"verification still running after "
                                  f"{self.cfg.verify_timeout:.0f} s (logs/verify.log)")
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
