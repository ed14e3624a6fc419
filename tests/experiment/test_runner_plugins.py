"""An experiment's workers (spawned processes, Ray tasks) run a policy from a
file: the spec travels in the cell context and each worker loads it."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from toyprofile import make_toy

from coadapt.experiment.grid import Cell
from coadapt.experiment.runner import CellContext, run_grid
from coadapt.policies import PRIMARY, REGISTRY
from coadapt.policies.plugins import plugin_specs, policy_options, resolve
from coadapt.world.workload import JobSpec, Workload

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "shortest_first.py"
OPTIONS = {"cluster": "2x4", "latency": 50.0, "interval": 60.0, "restart_delay": 5.0,
           "new_jobs": "node", "tiresias_threshold": "auto", "power": -1.0}


@pytest.fixture
def registry() -> Iterator[None]:
    saved, primary = dict(REGISTRY), list(PRIMARY)
    yield
    REGISTRY.clear()
    REGISTRY.update(saved)
    PRIMARY[:] = primary


def _plan(tmp_path: Path) -> tuple[list[Cell], CellContext, int]:
    """Two cells, fixed and shortest-first (from a copy of the docs' example in
    tmp_path), on a 4-job CSV-like workload of the toy job type."""
    plugin = tmp_path / "plugins" / "sf.py"
    plugin.parent.mkdir()
    shutil.copy(EXAMPLE, plugin)
    name = resolve(f"{plugin}:ShortestFirst")
    jobs = tuple(JobSpec(f"j{i}", 30.0 * i, "toy", 1 + i % 2, 32) for i in range(4))
    workload = Workload("tiny", tmp_path / "tiny.csv", jobs)
    ctx = CellContext({"toy": make_toy()}, None, OPTIONS, {"tiny": workload}, "fp",
                      plugins=plugin_specs([name]),
                      policy_args=policy_options(["shortest-first.max_slots=1"], [name]))
    return [Cell(10.0, "tiny", "fixed", 1), Cell(10.0, "tiny", name, 1)], ctx, len(jobs)


def _check(out: Path, outcome, jobs: int, plugin: str) -> None:
    assert not outcome.failed, outcome.failed
    rows = {r["policy"]: r for r in outcome.rows}
    assert set(rows) == {"fixed", "shortest-first"}
    assert all(r["completed"] == jobs for r in rows.values())
    events = [json.loads(line) for line in
              gzip.decompress((out / rows["shortest-first"]["log"]).read_bytes()).splitlines()]
    assert events[0]["plugins"] == [plugin]
    assert events[0]["policy_args"] == {"shortest-first": {"max_slots": 1}}
    assert max(e["replicas"] for e in events if e["kind"] == "allocate") == 1


@pytest.mark.usefixtures("registry")
def test_spawned_workers_load_a_file_policy(tmp_path):
    cells, ctx, jobs = _plan(tmp_path)
    outcome = run_grid(cells, ctx, tmp_path / "out", jobs=2)  # a spawn pool of two processes
    _check(tmp_path / "out", outcome, jobs, ctx.plugins[0])
    bare = replace(ctx, plugins=())  # the driver knows the policy; a fresh worker does not
    failed = run_grid(cells, bare, tmp_path / "bare", jobs=2).failed
    assert [k for k, _ in failed] == [cells[1].key] and "unknown policy 'shortest-first'" in failed[0][1]


@pytest.mark.usefixtures("registry")
def test_ray_tasks_load_a_file_policy(tmp_path):
    pytest.importorskip("ray")
    cells, ctx, jobs = _plan(tmp_path)
    outcome = run_grid(cells, ctx, tmp_path / "out", jobs=2, ray_address="local")
    _check(tmp_path / "out", outcome, jobs, ctx.plugins[0])
