"""Runs to target: event stream -> validation table, target detection, phi summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from coadapt.profiling.build import build_profile, curve_summary, job_meta
from coadapt.profiling.cpu_format import read_cpu_profile, write_cpu_profile
from coadapt.profiling.curves import (
    CurveRun,
    curve_batch_sizes,
    curve_workers,
    plan_runs,
    run_curves,
    to_target,
    validation_table,
)


@dataclass
class Job:
    name: str = "toy"
    init_batch_size: int = 32
    max_batch_size: int = 1024
    min_local_bsz: int = 8
    max_local_bsz: int = 256
    target: float = 0.85
    higher_is_better: bool = True
    eval_every: int = 10
    dataset_size: int = 1000


def _events(batch_size: int, seed: int = 0, n_steps: int = 40, every: int = 10,
            ) -> list[dict[str, Any]]:
    """Synthetic run: metric rises with progress; phi grows along training."""
    events: list[dict[str, Any]] = [{"t": 0.0, "kind": "header", "job": None}]
    scale = batch_size / 32
    progress = 0.0
    for step in range(1, n_steps + 1):
        sqr, var = 1.0 / step, 0.5 + 0.01 * step + 0.1 * seed
        progress += (var + sqr) / (var / scale + sqr)
        events.append({"t": 0.1 * step, "kind": "observation", "job": "toy", "step": step,
                       "step_time": 0.1, "sync_time": 0.01, "cpu_time": 0.09,
                       "local_bsz": batch_size, "accum_steps": 0, "batch_size": batch_size,
                       "workers": 1, "grad_sqr": sqr, "grad_var": var, "progress": progress,
                       "samples": step * batch_size})
        if step % every == 0:
            events.append({"t": 0.1 * step + 0.05, "kind": "validation", "job": "toy",
                           "progress": progress, "metric": min(0.3 + progress / 50, 1.0)})
    return events


def test_validation_table_joins_last_step() -> None:
    table = validation_table(_events(32))
    assert table.columns == ["progress", "iteration", "metric", "grad_sqr", "grad_var",
                             "samples", "wall_time"]
    assert table["iteration"].to_list() == [10, 20, 30, 40]
    assert table["samples"].to_list() == [320, 640, 960, 1280]
    assert table["grad_sqr"][0] == pytest.approx(0.1)
    assert table["wall_time"][0] == pytest.approx(1.05)
    assert table["progress"].to_list() == pytest.approx([10.0, 20.0, 30.0, 40.0])


def test_to_target_first_row_reaching() -> None:
    table = validation_table(_events(32))
    done = to_target(table, 0.85, True)
    assert done is not None and done["iteration"] == 30 and done["samples"] == 960
    assert to_target(table, 1.01, True) is None
    assert to_target(table, 0.45, False) is None  # lower is better: never below 0.5
    assert to_target(table, 0.6, False)["iteration"] == 10


def test_plan() -> None:
    job = Job()
    assert curve_batch_sizes(job, quick=True) == [32, 128, 512]
    assert curve_batch_sizes(job, quick=False) == [32, 64, 128, 256, 512, 1024]
    assert curve_workers(job, 32, 2) == 2 and curve_workers(job, 8, 2) == 1
    runs = plan_runs(job, [32, 128], seeds=2, workers_max=2)
    assert [(r.batch_size, r.seed) for r in runs] == [(32, 0), (128, 0), (32, 1), (128, 1)]


def test_summary_and_profile_round_trip(tmp_path: Path) -> None:
    job = Job()

    def runner(run: CurveRun, max_steps: int | None, events: Path) -> list[dict[str, Any]]:
        return _events(run.batch_size, run.seed)

    curves = run_curves(job, plan_runs(job, [32, 128], 2, 2), runner=runner)
    assert set(curves["seed"]) == {0, 1} and curves["reached"].any()
    summary = curve_summary(curves, job_meta(job))
    m0 = summary["32"]
    assert m0["samples_to_target"]["median"] == 960
    assert [r["reached"] for r in m0["runs"]] == [True, True]
    phi = m0["runs"][0]["phi"]
    assert phi["start"] == pytest.approx(32 * 0.6 / 0.1)  # step 10: var .6, sqr .1
    assert phi["start"] < phi["middle"] < phi["end"]
    assert m0["phi_end"]["min"] < m0["phi_end"]["max"]  # seeds differ

    cells = pl.DataFrame({"type": ["toy"] * 2, "workers": [1, 2], "local_bsz": [8, 8],
                          "step_time": [0.1, 0.12], "sync_time": [0.0, 0.02],
                          "cpu_time": [0.1, 0.1], "step_time_p25": [0.1, 0.11],
                          "step_time_p75": [0.1, 0.13], "step_time_min": [0.1, 0.1],
                          "step_time_max": [0.1, 0.2], "cpu_time_p25": [0.1, 0.1],
                          "cpu_time_p75": [0.1, 0.1], "sync_time_p25": [0.0, 0.02],
                          "sync_time_p75": [0.0, 0.02], "stretch": [1.0, 1.0],
                          "run_spread": [0.0, 0.1], "repeats": [2, 2], "runs_contended": [0, 0],
                          "runs_total": [2, 2], "steps": [8, 8]})
    raw = pl.DataFrame({"type": ["toy"], "workers": [1], "local_bsz": [8], "run": [0],
                        "step": [3], "step_time": [0.1]})
    prof = build_profile(job, raw, cells, curves, {"repeats": 2})
    out = write_cpu_profile(tmp_path / "toy", prof)
    back = read_cpu_profile(out)
    assert sorted(back.validation) == [32, 128]
    assert back.validation[32]["iteration"].to_list() == [10, 20, 30, 40]
    assert back.info["curves"]["32"]["samples_to_target"]["median"] == 960
    assert back.info["perf_params"] is not None
