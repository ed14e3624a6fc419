"""A tiny real measurement: one cell, a few steps of the real worker group (~5 s)."""

from __future__ import annotations

from pathlib import Path

from coadapt.jobs.registry import JOB_TYPES
from coadapt.tools.measure.stats import drop_warmup, mark_contention, summarize_cells
from coadapt.tools.measure.timing import Cell, GridSettings, measure_grid


def test_one_real_cell(tmp_path: Path) -> None:
    name = "mlp-mnist1d"
    job = JOB_TYPES[name]
    cell = Cell(name, 1, job.limits.min_local_bsz * 2)
    settings = GridSettings(local_sizes=1, repeats=1, steps=3, warmup=2, workers_max=1,
                            quiet_wait=0.0)
    raw = measure_grid([cell], settings, workdir=tmp_path)
    assert raw.height == 5 and raw["step"].to_list() == [1, 2, 3, 4, 5]
    assert (raw["step_time"] > 0).all() and (raw["cpu_time"] > 0).all()
    assert (raw["sync_time"] <= raw["step_time"]).all()
    assert (raw["run_wall"] > raw["step_time"].sum()).all()  # includes process start-up
    assert raw["others_cores"][0] is None or raw["others_cores"][0] >= 0.0
    summary = summarize_cells(mark_contention(drop_warmup(raw, settings.warmup)))
    row = summary.row(0, named=True)
    assert row["steps"] == 3 and row["repeats"] == 1
    assert row["step_time_p25"] <= row["step_time"] <= row["step_time_p75"]
