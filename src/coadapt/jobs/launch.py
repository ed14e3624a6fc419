"""Starting a worker group: the launch settings, the job's identity, core pinning,
the rendezvous and the processes.

Rank i runs ``python -m coadapt.jobs.worker`` with its ``WorkerSpec`` and the
standard rendezvous variables (rank 0's address and a free port) in its
environment, one BLAS thread, its output in ``logs/worker-<i>.log``, pinned to
``cores[i]``, on an emulated network inside its node's namespace and, on a
node of an emulated kind, with that kind's recipe (``WorkerRecipe``).
Supervising the processes is ``coadapt.jobs.group``'s.
"""

from __future__ import annotations

import logging
import operator
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from coadapt.jobs.checkpoint import CKPT_FILE, JOB_FILE, atomic_write_json, read_json
from coadapt.jobs.netns import Endpoint, free_port_in
from coadapt.jobs.procs import can_pin, free_port, worker_preexec
from coadapt.jobs.spec import SPEC_ENV, WorkerSpec
from coadapt.jobs.types import ConfigError

log = logging.getLogger(__name__)

THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class WorkerRecipe:
    """How one rank emulates its node's kind (``coadapt.world.kinds``): ``env``
    is in its environment from interpreter start (so before torch reads its
    instruction-set limits); ``cgroup``, a cgroup directory, is joined before
    exec (the kind's CPU quota). The empty recipe is a plain worker."""

    env: Mapping[str, str] = field(default_factory=dict)
    cgroup: str | None = None


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
    (``coadapt.backends.live.nodes``), the rendezvous at rank 0's node address; None: every
    rank on this machine's loopback. ``network`` describes it in the start
    event (e.g. {"network": "emulated", "bandwidth_gbps": 1}).

    ``recipes`` gives rank i the recipe of its node's kind (environment and
    cgroup, ``coadapt.backends.live.kinds``); None: plain workers."""

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
    recipes: tuple[WorkerRecipe, ...] | None = None


def check_cores(cores: tuple[int, ...] | None, workers: int) -> tuple[int, ...] | None:
    """The validated core list: one usable core per worker (a bad core would
    otherwise surface as an opaque preexec_fn failure when launching)."""
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


def check_recipes(recipes: tuple[WorkerRecipe, ...] | None, workers: int) -> None:
    """One recipe per worker, each cgroup present (a missing one would otherwise
    surface as an opaque preexec_fn failure when launching)."""
    if recipes is None:
        return
    if len(recipes) != workers:
        raise ConfigError("recipes", f"needs one per worker: {len(recipes)} for {workers} "
                          "workers")
    for r in recipes:
        if r.cgroup is not None and not (Path(r.cgroup) / "cgroup.procs").is_file():
            raise ConfigError("recipes", f"cgroup {r.cgroup} does not exist (removed while "
                              "the run was still launching?)")


def check_config(cfg: RunConfig) -> tuple[int, ...] | None:
    """ConfigError for a setting no launch can honour; returns the checked cores.
    (The batch is checked against the job type by ``rebatch.BatchControl``.)"""
    if cfg.max_steps is not None and cfg.max_steps < 1:
        raise ConfigError("max-steps", f"must be at least 1 (got {cfg.max_steps})")
    cores = check_cores(cfg.cores, cfg.workers)
    if cfg.endpoints is not None and len(cfg.endpoints) != cfg.workers:
        raise ConfigError("endpoints", f"needs one per worker: {len(cfg.endpoints)} for "
                          f"{cfg.workers} workers")
    check_recipes(cfg.recipes, cfg.workers)
    if not cfg.worker_timeout > 0:
        raise ConfigError("worker-timeout", f"must be positive (got {cfg.worker_timeout})")
    if not cfg.exit_grace >= 0:
        raise ConfigError("exit-grace", f"must be at least 0 (got {cfg.exit_grace})")
    return cores


def job_identity(cfg: RunConfig) -> dict[str, Any] | None:
    """The job the checkpoint directory belongs to (its ``job.json``), None for a new
    one; ConfigError if this launch would overwrite or mix up another job."""
    ckpt = Path(cfg.ckpt_dir)
    meta = read_json(ckpt / JOB_FILE) if ckpt.exists() else None
    if not cfg.resume and (ckpt / CKPT_FILE).exists():
        raise ConfigError("ckpt", f"{ckpt} already holds a checkpoint; pass --resume "
                          "to continue that job or choose an empty directory")
    if meta is not None and meta["job_type"] != cfg.job_type:
        raise ConfigError("type", f"{ckpt} belongs to job type {meta['job_type']!r}, "
                          f"not {cfg.job_type!r}")
    return meta


def record_launch(cfg: RunConfig, meta: dict[str, Any] | None, now: float) -> dict[str, Any]:
    """Count this launch in ``job.json`` (written atomically), creating it for a new
    job: its id, seed and first start (wall clock ``now``), which every later
    launch keeps so that event times and the data order continue."""
    if meta is None:
        meta = {"job_type": cfg.job_type, "job_id": cfg.job_id or cfg.job_type,
                "seed": cfg.seed, "first_start_wall": now, "launches": 0}
    elif cfg.seed != meta["seed"]:
        log.warning("resuming with the job's original seed %s (not %s): the data order "
                    "depends on it", meta["seed"], cfg.seed)
    meta["launches"] += 1
    atomic_write_json(Path(cfg.ckpt_dir) / JOB_FILE, meta)
    return meta


def rendezvous_port(cfg: RunConfig) -> int:
    """A free port for the rendezvous, in rank 0's network namespace if it has one."""
    ends = cfg.endpoints
    return free_port_in(ends[0].ns_path) if ends else free_port()


def worker_env(cfg: RunConfig, spec: WorkerSpec, rank: int, port: int) -> dict[str, str]:
    """Rank ``rank``'s environment: its kind's recipe, its spec, the rendezvous,
    one thread."""
    ends = cfg.endpoints
    recipe = cfg.recipes[rank].env if cfg.recipes else {}
    return {**os.environ, **THREAD_ENV, **recipe, SPEC_ENV: spec.to_json(),
            "MASTER_ADDR": ends[0].address if ends else "127.0.0.1",
            "MASTER_PORT": str(port),
            "WORLD_SIZE": str(cfg.workers), "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "GLOO_SOCKET_IFNAME": ends[rank].iface if ends else "lo",
            "PYTHONUNBUFFERED": "1"}


def launch_workers(cfg: RunConfig, spec: WorkerSpec, cores: tuple[int, ...] | None, port: int,
                   log_dir: Path, procs: list[subprocess.Popen[bytes]],
                   logs: list[IO[bytes]]) -> None:
    """Start every rank, appending each process and its log file as it starts, so
    that if a later rank fails to start the caller can kill those already waiting
    for the rendezvous."""
    ends = cfg.endpoints
    for rank in range(cfg.workers):
        fh = open(log_dir / f"worker-{rank}.log", "ab")  # noqa: SIM115
        logs.append(fh)
        core = cores[rank] if cores is not None else None
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "coadapt.jobs.worker"], env=worker_env(cfg, spec, rank, port),
            stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
            preexec_fn=worker_preexec(core, ends[rank].ns_path if ends else None,
                                      cfg.recipes[rank].cgroup if cfg.recipes else None),
            start_new_session=True))
