"""Run one workload under one policy with real processes on the wall clock.

The same engine and policy as ``coadapt simulate``, on a
``simpy.rt.RealtimeEnvironment`` with the live backend; the same event log,
summary and tables come out. Ctrl-C or SIGTERM: every group checkpoints and
stops, the log ends with ``end`` (interrupted) and reads back; a second
signal kills. Workers on nodes of an emulated kind run with its recipe, in
cgroups this run makes and removes however it ends (``backends.live.kinds``).
``resume_live`` continues such a run with the downtime left out
of the experiment clock (so out of every JCT).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import simpy.rt
from threadpoolctl import threadpool_limits

from coadapt.backends.live.backend import LiveBackend, LiveSettings, RunInterrupted
from coadapt.backends.live.cores import usable_cores
from coadapt.backends.live.kinds import KindCgroups
from coadapt.backends.live.nodes import EmulatedNodes
from coadapt.engine.loop import Engine
from coadapt.eventlog import EventLog
from coadapt.jobs.registry import JOB_TYPES
from coadapt.jobs.warm import warm_caches
from coadapt.policies import make_policy
from coadapt.runs.fairness import append_fairness, yardstick_for
from coadapt.runs.live.checks import check_live_workload
from coadapt.runs.live.resume import ResumeState, restore_jobs
from coadapt.runs.settings import RunSettings, write_results
from coadapt.ui.status import StatusTable
from coadapt.world.kinds import NodeKind, load_kinds
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.workload import Workload
from coadapt.world.world import World

log = logging.getLogger(__name__)

EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class LivePlan:
    workload: Workload
    policy: str
    settings: RunSettings
    live: LiveSettings
    out_dir: Path  # OUT/<policy>
    world: World  # limits; profiles and costs for T_iso and ETAs only, never the policy
    header: Mapping[str, Any] = field(default_factory=dict)  # calibration, prediction digest
    kinds: Mapping[str, NodeKind] = field(default_factory=dict)  # the node kinds (empty: shipped)


class AlreadyRun(ValueError):
    """The output folder holds a run already."""


def expected_progress(profiles: Mapping[str, AppProfile] | None) -> dict[str, float]:
    """Progress at which each type reached its target at M0 in its profile (for ETAs)."""
    out = {}
    for app, p in (profiles or {}).items():
        e = p.completion_epoch(p.limits.init_batch_size)
        out[app] = float(p.epoch_progress[min(e + 1, len(p.epoch_progress) - 1)])
    return out


@dataclass
class _SignalState:
    count: int = 0
    closing: bool = False  # shutting down already: a signal kills, never unwinds


@contextlib.contextmanager
def _signals(backend: LiveBackend) -> Iterator[_SignalState]:
    """First SIGINT/SIGTERM: graceful stop of every group; second: kill now."""
    state = _SignalState()

    def handler(signum: int, frame: object) -> None:
        state.count += 1
        if state.count == 1 and not state.closing:
            log.warning("%s: stopping every job at its next step (checkpoint); "
                        "signal again to kill", signal.Signals(signum).name)
            backend.interrupt()
            return
        log.warning("%s again: killing every job now", signal.Signals(signum).name)
        backend.kill_all()  # the poll loop ends the run; never unwind from a handler

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield state
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _prepare_job_types(apps: set[str]) -> None:
    """Build data caches and warm the page cache before t = 0 (MNIST-1D
    generation and a cold torch import take seconds)."""
    warm_caches()
    for app in sorted(apps):
        job = JOB_TYPES[app]
        if job.prepare is not None:
            job.prepare()


def _fairness(plan: LivePlan, elog: EventLog, now: float) -> None:
    """The shared T_iso of every job (``runs.fairness``: the same table a
    simulation of this workload and cluster uses), appended to the live log."""
    append_fairness(elog, now, plan.workload, yardstick_for(plan.settings, plan.world))


@contextlib.contextmanager
def _nodes(plan: LivePlan) -> Iterator[EmulatedNodes | None]:
    """The emulated nodes of a run on ``--network emulated`` (gone when it ends,
    however it ends), shaped to the cluster's bandwidth; None on loopback."""
    if plan.live.network != "emulated":
        yield None
        return
    with EmulatedNodes(plan.settings.cluster.num_nodes,
                       plan.settings.cluster.network.bandwidth_gbps) as nodes:
        yield nodes


@contextlib.contextmanager
def _kinds(plan: LivePlan) -> Iterator[KindCgroups]:
    """The recipes of the cluster's node kinds and the cgroups of those with a
    CPU quota (removed when the run ends, however it ends)."""
    with KindCgroups(plan.settings.cluster, plan.kinds or load_kinds()) as kinds:
        yield kinds


def run_live(plan: LivePlan, resume: ResumeState | None = None,
             cores: list[int] | None = None) -> dict[str, Any]:
    """Run (or, with ``resume``, continue) one policy; returns the summary with
    ``interrupted`` set when a signal stopped it."""
    wl, s = plan.workload, plan.settings
    check_live_workload(wl, s.cluster)
    out = plan.out_dir
    events_path = out / "events.jsonl"
    if resume is None and events_path.exists() and events_path.stat().st_size > 0:
        raise AlreadyRun(f"{out}: holds a run already; continue it with 'coadapt live --resume "
                         f"{out.parent}' or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    apps = {j.application for j in wl.jobs}
    limits = plan.world.limits
    _prepare_job_types(apps)
    policy = make_policy(plan.policy, s.policy_config())
    t_start = resume.t_end if resume is not None else 0.0
    env = simpy.rt.RealtimeEnvironment(initial_time=t_start, factor=1.0, strict=False)
    status = StatusTable(title=f"live {plan.policy} on {s.cluster}",
                         expected_progress=expected_progress(plan.world.profiles),
                         enabled=plan.live.status)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    interrupted = False
    with (_nodes(plan) as nodes, _kinds(plan) as kinds, EventLog(events_path, fsync=True) as elog,
          threadpool_limits(1)):
        backend = LiveBackend(out, s.cluster, plan.live, cores=cores, status=status,
                              nodes=None if nodes is None else [n.endpoint for n in nodes.nodes],
                              kinds=kinds)
        if resume is None:
            elog.header(
                mode=LiveBackend.mode, policy=plan.policy, workload=wl.name,
                workload_path=str(wl.path), **s.describe(),
                host=socket.gethostname(), cores=usable_cores() if cores is None else cores,
                pid=os.getpid(), live={"targets": dict(plan.live.targets),
                                       "eval_every": dict(plan.live.eval_every),
                                       "poll": plan.live.poll, "max_retries": plan.live.max_retries,
                                       "network": plan.live.network,
                                       "qdiscs": nodes.qdiscs() if nodes is not None else None,
                                       **(kinds.describe() if kinds.emulated else {})},
                **plan.header)
        else:
            elog.emit(t_start, "resume", None, downtime_s=time.time() - resume.wall_end,
                      pid=os.getpid())
        engine = Engine(wl, limits, backend, policy, s.cluster, elog, interval=s.interval,
                        restart_delay=s.restart_delay, env=env, round_info=backend.round_info,
                        first_round=0.0 if resume is not None else None,
                        kind_speed=plan.settings.kind_speed(plan.world), horizon=s.horizon)
        if resume is not None:
            jobs, holding = restore_jobs(resume, backend, limits)
            for job in jobs:
                engine.adopt(job, abandoned=job.state == "failed")
            for name in holding:
                elog.emit(t_start, "allocate", name, allocation=[0] * s.cluster.num_nodes,
                          replicas=0, nodes=0, batch=0, micro=0, accum=0, restart=False,
                          reason="resumed")
        error: BaseException | None = None
        with _signals(backend) as sig:
            try:
                engine.run()
            except RunInterrupted:
                interrupted = True
            except BaseException as exc:  # a bug or a kill: still stop every job, end the log
                error, interrupted = exc, True
            sig.closing = True
            backend.close()
            status.update(env.now, [j.status(env.now) for j in backend.jobs], force=True)
            now = backend.now()
            if not interrupted and plan.world.profiles and s.fairness:
                _fairness(plan, elog, now)
            if interrupted:
                for job in engine.active:  # their processes are gone: they hold nothing now
                    if job.record.replicas:
                        elog.emit(now, "allocate", job.record.name,
                                  allocation=[0] * s.cluster.num_nodes, replicas=0, nodes=0,
                                  batch=0, micro=0, accum=0, restart=False,
                                  reason="interrupted")
            elog.emit(now, "end", None, wall_s=time.perf_counter() - wall0,
                      executor_cpu_s=time.process_time() - cpu0,
                      interrupted=interrupted, wall_end=time.time(),
                      abandoned=sorted(engine.abandoned),
                      error=repr(error) if error is not None else None)
        if error is not None:
            raise error
    summary = write_results(out)
    summary["interrupted"] = interrupted
    return summary
