"""Timing statistics and grid planning, on synthetic steps (no training)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from coadapt.models.batching import JobLimits
from coadapt.tools.measure.stats import (
    drop_warmup,
    mark_contention,
    observations_frame,
    placements_frame,
    spread_report,
    summarize_cells,
)
from coadapt.tools.measure.timing import (
    Cell,
    GridSettings,
    geometric_sizes,
    measure_grid,
    plan_cells,
    schedule,
)


@dataclass
class Job:
    name: str = "toy"
    limits: JobLimits = JobLimits(init_batch_size=8, max_batch_size=192, min_local_bsz=8,
                                  max_local_bsz=128, max_replicas=64)


def _raw(step_times: dict[int, list[float]], cpu: dict[int, list[float]] | None = None,
         ) -> pl.DataFrame:
    rows = []
    for run, times in step_times.items():
        for i, st in enumerate(times):
            c = cpu[run][i] if cpu else st * 0.9
            rows.append({"type": "toy", "workers": 1, "local_bsz": 8, "run": run, "step": i + 1,
                         "step_time": st, "sync_time": 0.1 * st, "cpu_time": c})
    return pl.DataFrame(rows)


def test_geometric_sizes() -> None:
    assert geometric_sizes(8, 128, 5) == [8, 16, 32, 64, 128]
    assert geometric_sizes(16, 16, 4) == [16]
    assert geometric_sizes(8, 9, 5) == [8, 9]


def test_plan_cells_respects_limits() -> None:
    cells = plan_cells(Job(), GridSettings(local_sizes=5, workers_max=2))
    assert Cell("toy", 1, 128) in cells and Cell("toy", 2, 8) in cells
    assert max(c.batch_size for c in cells) <= 192
    assert max(c.micro for c in cells if c.workers == 2) == 96


def test_schedule_interleaves_repeats() -> None:
    cells = [Cell("toy", 1, m) for m in (8, 16, 32, 64)]
    order = schedule(cells, repeats=3, seed=1)
    assert len(order) == 12
    for r in range(3):  # every repeat holds every cell once, in its own shuffled order
        assert sorted(c.micro for rr, c in order if rr == r) == [8, 16, 32, 64]
    firsts = [[c for rr, c in order if rr == r] for r in range(3)]
    assert firsts[0] != firsts[1] or firsts[1] != firsts[2]


def test_warmup_median_and_spread() -> None:
    raw = _raw({0: [9.0, 5.0, 1.0, 2.0, 3.0], 1: [9.0, 9.0, 2.0, 2.0, 2.0]})
    kept = drop_warmup(raw, 2)
    assert kept.height == 6 and kept["step_time"].max() == 3.0
    s = summarize_cells(kept).row(0, named=True)
    assert s["step_time"] == 2.0 and s["step_time_min"] == 1.0 and s["step_time_max"] == 3.0
    assert s["step_time_p25"] == 2.0 and s["step_time_p75"] == 2.0
    assert s["repeats"] == 2 and s["steps"] == 6 and s["run_spread"] == 0.0
    assert s["sync_time"] == pytest.approx(0.2)
    placements = placements_frame(summarize_cells(kept))
    assert placements.columns[:4] == ["placement", "local_bsz", "step_time", "sync_time"]
    assert placements["placement"].to_list() == ["1"]


def test_contended_run_is_left_out() -> None:
    # Run 1 took twice the wall time for the same CPU time: someone stole the core.
    raw = _raw({0: [1.0] * 4, 1: [2.0] * 4, 2: [1.1] * 4},
               cpu={0: [0.9] * 4, 1: [0.9] * 4, 2: [0.95] * 4})
    marked = mark_contention(raw)
    assert marked.group_by("run").agg(pl.col("contended").first()).sort("run")[
        "contended"].to_list() == [False, True, False]
    s = summarize_cells(marked).row(0, named=True)
    assert s["step_time"] == pytest.approx(1.05) and s["runs_contended"] == 1
    assert s["repeats"] == 2 and s["runs_total"] == 3
    report = spread_report(summarize_cells(marked))
    assert report["runs_contended"] == 1 and report["runs_total"] == 3


def test_busy_machine_marks_runs() -> None:
    raw = _raw({0: [1.0] * 3, 1: [1.0] * 3}).with_columns(
        pl.when(pl.col("run") == 1).then(1.2).otherwise(0.1).alias("others_cores"))
    s = summarize_cells(mark_contention(raw)).row(0, named=True)
    assert s["runs_contended"] == 1 and s["repeats"] == 1


def test_all_runs_contended_keeps_data() -> None:
    raw = _raw({0: [1.0] * 3}, cpu={0: [0.1] * 3})
    assert summarize_cells(raw)["steps"].to_list() == [3]


def test_observations_frame_keeps_slowest_rank() -> None:
    events = [
        {"t": 1.0, "kind": "observation", "rank": 0, "step": 1, "step_time": 0.1,
         "sync_time": 0.01, "cpu_time": 0.09, "local_bsz": 8},
        {"t": 1.0, "kind": "observation", "rank": 1, "step": 1, "step_time": 0.2,
         "sync_time": 0.02, "cpu_time": 0.08, "local_bsz": 8},
        {"t": 1.1, "kind": "validation", "progress": 1.0, "metric": 0.5},
    ]
    frame = observations_frame(events)
    assert frame.height == 1 and frame["step_time"][0] == 0.2


def test_measure_grid_with_fake_runner(tmp_path: Path) -> None:
    def runner(cell: Cell, max_steps: int, seed: int, events: Path) -> list[dict[str, Any]]:
        base = 0.01 + 0.001 * cell.micro
        return [{"t": float(i), "kind": "observation", "step": i, "step_time": base,
                 "sync_time": 0.001 * (cell.workers - 1), "cpu_time": base * 0.9}
                for i in range(1, max_steps + 1)]

    settings = GridSettings(local_sizes=3, repeats=2, steps=4, warmup=1, workers_max=2,
                            quiet_wait=0.0)
    cells = plan_cells(Job(), settings)
    raw = measure_grid(cells, settings, runner=runner, workdir=tmp_path)
    assert raw.height == len(cells) * 2 * 5
    assert raw["others_cores"].null_count() < raw.height  # measured from /proc/stat
    summary = summarize_cells(drop_warmup(raw.drop("others_cores"), settings.warmup))
    assert summary.height == len(cells) and set(summary["repeats"]) == {2}
    assert summary.filter(pl.col("local_bsz") == 8)["step_time"][0] == pytest.approx(0.018)
