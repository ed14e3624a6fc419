"""Run the grid's cells in parallel and file each result as soon as it exists.

A cell runs in a worker (a local spawned process, a Ray task, or in-process
for ``jobs=1``) and returns its row and its gzip'd event log; only the driver
writes files. Each log is written atomically (temp file, fsync, rename)
before its row is appended and fsynced to ``cells.jsonl``, so an interrupted
grid leaves only complete cells, and ``--resume`` reruns the rest. Ctrl-C or
SIGTERM terminates the workers at once (their cells are simply not filed).
A worker knows only the built-in policies until it loads the context's
``plugins`` (``make_policy`` does, from the cell's ``PolicyConfig``).
"""

from __future__ import annotations

import gzip
import json
import logging
import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from coadapt.experiment.grid import Cell, describe
from coadapt.policies.base import PolicyOptions
from coadapt.util.scratch import scratch_dir
from coadapt.world.costs import LiveCosts
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.workload import Workload
from coadapt.world.world import World

log = logging.getLogger(__name__)
CELLS_FILE = "cells.jsonl"
LOGS_DIR = "logs"
CELL_SCRATCH = "coadapt-cell-"
"""The prefix of a cell's scratch folder in the temp folder (util.scratch)."""


@dataclass(frozen=True)
class CellContext:
    """Everything a worker needs besides the cell, loaded once by the driver
    (so a remote Ray node needs neither the profile folder nor the CSVs)."""

    profiles: Mapping[str, AppProfile]
    costs: LiveCosts | None
    options: Mapping[str, Any]  # engine options (see runs.options.add_options), no bandwidth
    workloads: Mapping[str, Workload] = field(default_factory=dict)  # fixed (CSV) workloads
    fingerprint: str = ""
    plugins: tuple[str, ...] = ()
    """Specs of the cells' policies from files or modules (``policies.plugins.plugin_specs``):
    a worker process (spawned, or a Ray task) loads them before it builds its policy."""
    policy_args: PolicyOptions = ()  # --policy-arg, typed (``policies.plugins.policy_options``)


@dataclass
class Outcome:
    rows: list[dict[str, Any]]
    failed: list[tuple[str, str]]  # (key, error)
    interrupted: bool = False


def workload_for(cell: Cell, ctx: CellContext, world: World) -> tuple[Workload, float]:
    """The cell's workload and its load (arrival rate relative to philly-small):
    a named set is generated for the cell's seed, its requests tuned at the
    world's truth (the profiles refined by the live costs), so "tuned" means
    tuned at what the jobs will run at."""
    from coadapt.workloads.sets import SETS, make_workload

    if cell.workload in ctx.workloads:
        wl = ctx.workloads[cell.workload]
        return wl, arrival_load(wl)
    return make_workload(cell.workload, cell.seed, world), SETS[cell.workload].load


def arrival_load(workload: Workload) -> float:
    """Jobs per 30 minutes over the submission span, philly-small's rate being 30."""
    times = [j.submit_time for j in workload.jobs]
    span = max(max(times) - min(times), 1.0)
    return round(len(times) / span * 1800.0 / 30.0, 2)


def run_cell(ctx: CellContext, cell: Cell) -> tuple[dict[str, Any], bytes]:
    """Simulate one cell; returns its row and its gzip'd event log."""
    import argparse

    from coadapt.eventlog import log_in, read_events
    from coadapt.metrics.breakdown import breakdown
    from coadapt.runs.options import settings as run_settings
    from coadapt.runs.options import world_of
    from coadapt.runs.simulate import simulate_policy

    args = argparse.Namespace(**ctx.options, bandwidth=cell.bandwidth, seed=cell.seed)
    world = world_of(args, ctx.profiles, ctx.costs)  # the cell's one world
    workload, load = workload_for(cell, ctx, world)
    settings = replace(run_settings(args, world, workload, show_progress=False),
                       policy_args=ctx.policy_args, plugins=ctx.plugins)  # make_policy loads them
    with scratch_dir(CELL_SCRATCH) as tmp:  # a killed worker's is removed at the next start
        summary = simulate_policy(world, workload, cell.policy, settings, tmp)
        log = log_in(tmp)
        raw = gzip.decompress(log.read_bytes()) if log.suffix == ".gz" else log.read_bytes()
        extra = breakdown(read_events(log))
    row = {**describe(cell), "set": cell.workload, "load": load, **summary, **extra,
           "tiresias_threshold": settings.tiresias_threshold,
           "restart_delay": settings.restart_delay, "fingerprint": ctx.fingerprint,
           "log": log_path(cell, ctx.fingerprint), "simulated": True}
    row["workload"] = workload.name
    return row, gzip.compress(raw, 6)


def log_path(cell: Cell, fingerprint: str) -> str:
    """Relative path of a cell's log; it names the settings, so a resume under
    other settings never overwrites the log an older row points to."""
    return f"{LOGS_DIR}/{cell.key}.{fingerprint or 'x'}.jsonl.gz"


def _safe_run(ctx: CellContext, cell: Cell) -> tuple[Cell, dict[str, Any] | None, bytes | str]:
    """A cell's result, or its traceback: one bad cell must not sink the grid."""
    try:
        row, blob = run_cell(ctx, cell)
        return cell, row, blob
    except _Terminate:
        raise  # SIGTERM in the driver (in-process cells): stop, don't file a failure
    except Exception:  # noqa: BLE001 - reported per cell, the grid goes on
        return cell, None, traceback.format_exc()


def _quiet_worker() -> None:
    """Workers leave Ctrl-C to the driver, which terminates them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def file_result(out: Path, row: dict[str, Any], blob: bytes) -> None:
    """Log first (atomically), then the row (appended, fsynced): a row always
    has its log."""
    from coadapt.util.atomic import atomic_write_bytes

    (out / row["log"]).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / row["log"], blob)
    with open(out / CELLS_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def finished(out: Path, fingerprint: str) -> dict[str, dict[str, Any]]:
    """Rows already filed under the same settings whose log exists (for --resume)."""
    path = out / CELLS_FILE
    if not path.exists():
        return {}
    done = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            log.warning("%s:%d: unreadable row skipped (it will be rerun)", path, i)
            continue
        if row.get("fingerprint") == fingerprint and (out / row.get("log", "-")).exists():
            done[row["key"]] = row
    return done


class _Terminate(Exception):
    """SIGTERM, turned into an exception so the driver can stop its workers."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminate()


def run_grid(cells: Sequence[Cell], ctx: CellContext, out: Path, jobs: int = 1,
             ray_address: str | None = None,
             on_done: Callable[[Cell, bool], None] | None = None) -> Outcome:
    """Run ``cells`` and file each as it finishes. Ctrl-C/SIGTERM: workers are
    terminated, what finished stays filed, ``interrupted`` is set."""
    outcome = Outcome([], [])
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if ray_address is not None:
            from coadapt.experiment.ray_pool import RayPool
            with RayPool(ray_address, jobs) as ray_pool:
                signal.signal(signal.SIGTERM, _on_sigterm)  # ray.init installs its own
                _collect(ray_pool.results(cells, ctx, _safe_run), out, outcome, on_done)
        elif jobs <= 1 or len(cells) <= 1:
            _collect((_safe_run(ctx, c) for c in cells), out, outcome, on_done)
        else:
            _collect_pool(cells, ctx, min(jobs, len(cells)), out, outcome, on_done)
    except (KeyboardInterrupt, _Terminate):
        outcome.interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
    return outcome


def _collect_pool(cells: Sequence[Cell], ctx: CellContext, workers: int, out: Path,
                  outcome: Outcome, on_done: Callable[[Cell, bool], None] | None) -> None:
    """Spawned worker processes; a worker that dies (OOM, SIGKILL) fails the
    cells still in the pool instead of hanging the grid; leaving early
    (Ctrl-C, SIGTERM) kills every worker."""
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_quiet_worker)
    try:
        futures = {pool.submit(_safe_run, ctx, c): c for c in cells}

        def results() -> Iterator[tuple]:
            for fut in as_completed(futures):
                try:
                    yield fut.result()
                except BrokenProcessPool as exc:
                    yield futures[fut], None, f"worker process died: {exc}"
        _collect(results(), out, outcome, on_done)
    finally:
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        for proc in procs:
            proc.join(timeout=10)


def _collect(results: Iterator, out: Path, outcome: Outcome,
             on_done: Callable[[Cell, bool], None] | None) -> None:
    for cell, row, blob in results:
        if row is None:
            log.error("cell %s failed:\n%s", cell.key, blob)
            outcome.failed.append((cell.key, str(blob).strip().splitlines()[-1]))
        else:
            file_result(out, row, blob)
            outcome.rows.append(row)
        if on_done is not None:
            on_done(cell, row is not None)
