"""Runs to target: event stream -> validation table, target detection, phi summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from coadapt.models.batching import JobLimits
from coadapt.tools.measure.build import build_profile, curve_summary, job_meta, select_validation
from coadapt.tools.measure.curve_plan import CurvePlanner
from coadapt.tools.measure.curve_records import StepModel, curves_frame, records_summary
from coadapt.tools.measure.curves import (
    EXTRA_FACTORS,
    CurveRun,
    CurveRunner,
    curve_batch_sizes,
    curve_workers,
    to_target,
    validation_table,
)
from coadapt.world.profiles.cpu_format import read_cpu_profile, write_cpu_profile


@dataclass
class Job:
    name: str = "toy"
    limits: JobLimits = JobLimits(init_batch_size=32, max_batch_size=1024, min_local_bsz=8,
                                  max_local_bsz=256, max_replicas=64)
    target: float = 0.85
    higher_is_better: bool = True
    eval_every: int = 10
    dataset_size: int = 1000
    metric: str | None = None


def _events(batch_size: int, seed: int = 0, n_steps: int = 40, every: int = 10,
            with_step: bool = False) -> list[dict[str, Any]]:
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
                           "progress": progress, "metric": min(0.3 + progress / 50, 1.0),
                           **({"step": step} if with_step else {})})
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


def test_validation_table_joins_on_step_when_given() -> None:
    events = _events(32, with_step=True)
    for e in events:
        if e["kind"] == "validation":
            e["t"] += 5.0  # a slow evaluation must not matter
    table = validation_table(events)
    assert table["iteration"].to_list() == [10, 20, 30, 40]
    assert table["samples"].to_list() == [320, 640, 960, 1280]


def test_to_target_first_row_reaching() -> None:
    table = validation_table(_events(32))
    done = to_target(table, 0.85, True)
    assert done is not None and done["iteration"] == 30 and done["samples"] == 960
    assert to_target(table, 1.01, True) is None
    assert to_target(table, 0.45, False) is None  # lower is better: never below 0.5
    assert to_target(table, 0.6, False)["iteration"] == 10


def test_plan() -> None:
    job = Job()
    assert curve_batch_sizes(job) == [32, 128, 512]
    assert curve_batch_sizes(job, EXTRA_FACTORS) == [64, 256, 1024]
    assert curve_workers(job, 32, 2) == 2 and curve_workers(job, 8, 2) == 1


class FakeRunner:
    """Deterministic stand-in for the worker group: progress += r(S) per step,
    metric = 0.3 + progress/(50 (1 + S/64)), validation every 10 progress; stops at target."""

    def __init__(self) -> None:
        self.state: dict[Path, tuple[list[dict[str, Any]], float, int]] = {}
        self.calls: list[tuple[int, int | None, bool]] = []
        self.limits: list[float | None] = []

    def __call__(self, run: CurveRun, max_steps: int | None, base: Path, resume: bool,
                 target: float | None, seconds: float | None = None) -> list[dict[str, Any]]:
        self.calls.append((run.batch_size, max_steps, resume))
        self.limits.append(seconds)
        events, progress, step = self.state.get(base, ([{"t": 0.0, "kind": "start"}], 0.0, 0))
        assert resume == (base in self.state)
        goal = 0.85 if target is None else target
        scale = run.batch_size / 32
        for _ in range(max_steps or 10**6):
            step += 1
            sqr, var = 1.0 / (1.0 + progress), 0.5 + 0.1 * run.seed  # phi grows along training
            gain = (var + sqr) / (var / scale + sqr)
            before, progress = progress, progress + gain
            events.append({"t": 0.1 * step, "kind": "observation", "step": step,
                           "step_time": 0.1, "sync_time": 0.0, "cpu_time": 0.1,
                           "grad_sqr": sqr, "grad_var": var, "progress": progress,
                           "samples": step * run.batch_size})
            if int(progress // 10) > int(before // 10):
                metric = 0.3 + progress / (50 * (1 + scale / 64))  # large M: less per progress
                events.append({"t": 0.1 * step, "kind": "validation", "progress": progress,
                               "metric": metric})
                if metric >= goal:
                    break
        self.state[base] = (events, progress, step)
        return list(events)


def test_planner_runs_tiers_and_extends(tmp_path: Path) -> None:
    job = Job(eval_every=10)
    summary = pl.DataFrame({"type": ["toy"] * 4, "workers": [1, 1, 2, 2],
                            "local_bsz": [8, 256, 8, 256], "step_time": [0.01, 0.1, 0.012, 0.11],
                            "sync_time": [0.0, 0.0, 0.002, 0.002]})
    model = StepModel(summary, startup={"toy": 1.0})
    assert model.step_time(job, 2, 32) == pytest.approx(0.01 + 8 / 248 * 0.098 + 0.002)
    runner = FakeRunner()
    planner = CurvePlanner([job], model, budget_s=600.0, quick=False, seeds=2, workers_max=2,
                           runner=runner, workdir=tmp_path)
    records = planner.execute()
    statuses = {(r.run.batch_size, r.run.seed, r.tier): r.status for r in records}
    assert statuses[(32, 0, "m0")] == "reached" and statuses[(32, 1, "seeds")] == "reached"
    assert statuses[(512, 0, "core")] == "reached"
    assert (1024, 0, "extra") in statuses
    assert any(resume for _, _, resume in runner.calls)  # some curve was extended
    rows = {r.run.batch_size: r.table.height for r in records if r.run.seed == 0}
    assert max(rows.values()) - min(rows.values()) <= 1, rows  # curves extended to match
    curves = curves_frame(records, {"toy": job})
    assert set(curves["seed"]) == {0, 1} and curves["reached"].any()
    runs = records_summary(records)
    assert {r["status"] for r in runs} <= {"reached", "capped", "skipped"}


def test_planner_caps_to_budget(tmp_path: Path) -> None:
    job = Job()
    summary = pl.DataFrame({"type": ["toy"] * 2, "workers": [2, 2], "local_bsz": [8, 256],
                            "step_time": [1.0, 10.0], "sync_time": [0.0, 0.0]})
    runner = FakeRunner()
    planner = CurvePlanner([job], StepModel(summary, startup={"toy": 1.0}), budget_s=60.0,
                           quick=True, seeds=1, workers_max=2, runner=runner, workdir=tmp_path)
    records = planner.execute()
    assert [c[1] for c in runner.calls][0] <= 60  # the step cap follows the budget
    assert {r.status for r in records} <= {"capped", "skipped", "reached"}
    assert any(r.status != "reached" for r in records)


def test_summary_and_profile_round_trip(tmp_path: Path) -> None:
    job = Job()
    runner = FakeRunner()
    runs = [CurveRun("toy", m, 1, s) for s in (0, 1) for m in (32, 128)]
    frames = []
    for run in runs:
        table = validation_table(runner(run, None, tmp_path / run.label(), False, None))
        frames.append(table.with_columns(pl.lit(run.batch_size).alias("batch_size"),
                                         pl.lit(run.seed).alias("seed")))
    curves = pl.concat(frames)
    summary = curve_summary(curves, job_meta(job))
    m0 = summary["32"]
    assert [r["reached"] for r in m0["runs"]] == [True, True]
    assert m0["samples_to_target"]["median"] > 0
    phi = m0["runs"][0]["phi"]
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
    assert back.curves is not None and set(back.curves["seed"]) == {0, 1}
    assert "phi" in back.curves.columns
    assert back.validation[32]["iteration"].to_list() == curves.filter(
        (pl.col("seed") == 0) & (pl.col("batch_size") == 32))["iteration"].to_list()
    assert back.info["curves"]["by_batch_size"]["32"]["samples_to_target"]["median"] > 0
    assert back.info["perf_params"] is not None


def test_capped_curve_kept_and_flagged() -> None:
    def run(bsz: int, rows: int, reached: bool) -> pl.DataFrame:
        return pl.DataFrame({"progress": [100.0 * (i + 1) for i in range(rows)],
                             "iteration": list(range(1, rows + 1)), "metric": [0.5] * rows,
                             "grad_sqr": [1.0] * rows, "grad_var": [1.0] * rows,
                             "samples": list(range(rows)), "wall_time": [1.0] * rows,
                             "reached": [False] * (rows - 1) + [reached],
                             "batch_size": [bsz] * rows, "seed": [0] * rows})

    curves = pl.concat([run(32, 5, True), run(128, 6, True), run(512, 2, False)])
    validation, capped = select_validation(curves)
    assert sorted(validation) == [32, 128, 512] and list(capped) == ["512"]
    assert validation[512].columns[:5] == ["progress", "iteration", "metric", "grad_sqr",
                                           "grad_var"]


def test_probe_then_resume_when_time_allows(tmp_path: Path) -> None:
    """16 x M0 looks too expensive for the core tier: probed (capped), then resumed
    from its checkpoint in the finish tier, where the rest of its need fits."""
    job = Job(eval_every=4)  # a probe (4 progress) is far from the target
    summary = pl.DataFrame({"type": ["toy"] * 2, "workers": [2, 2], "local_bsz": [16, 256],
                            "step_time": [0.01, 5.0], "sync_time": [0.0, 0.0]})
    runner = FakeRunner()
    planner = CurvePlanner([job], StepModel(summary, startup={"toy": 0.0},
                                            overhead={"toy": 1.0}),
                           budget_s=120.0, quick=False, seeds=1, workers_max=2, runner=runner,
                           workdir=tmp_path)
    records = planner.execute()
    big = next(r for r in records if r.run.batch_size == 512 and r.run.seed == 0)
    assert big.launches >= 2 and big.status == "reached"
    assert [c for c in runner.calls if c[0] == 512][1][2] is True  # second launch resumed


def _clocked_runner(monkeypatch: pytest.MonkeyPatch, model: StepModel, job: Job,
                    mispriced: float = 1.0, startup: float = 0.0,
                    launches: list[tuple[int, int, bool]] | None = None,
                    ) -> tuple[CurveRunner, list[float]]:
    """A FakeRunner on a simulated clock (the planner's ``time.monotonic``): each
    launch costs ``startup`` plus its steps at ``mispriced`` x the priced step time,
    and, like the real group, stops at its wall-clock limit whatever its step cap."""
    import coadapt.tools.measure.curve_plan as plan

    clock = [0.0]
    monkeypatch.setattr(plan.time, "monotonic", lambda: clock[0])
    fake = FakeRunner()

    def runner(run: CurveRun, max_steps: int | None, base: Path, resume: bool,
               target: float | None, seconds: float | None = None) -> list[dict[str, Any]]:
        assert seconds is not None and seconds > 0
        if launches is not None:
            launches.append((run.batch_size, run.seed, resume))
        per = mispriced * model.step_time(job, run.workers, run.batch_size)
        fits = max(int((seconds - startup) / per), 1)
        before = sum(e["kind"] == "observation" for e in fake.state.get(base, ([], 0, 0))[0])
        events = fake(run, min(max_steps or fits, fits), base, resume, target, seconds)
        steps = sum(e["kind"] == "observation" for e in events) - before
        clock[0] += startup + steps * per
        return events

    return runner, clock


@pytest.mark.parametrize("mispriced", [1.0, 3.0])
def test_planner_keeps_to_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     mispriced: float) -> None:
    """With a simulated clock that each run advances by its true cost, the planner ends
    within its budget (plus a forced M0 run), also when the timing grid underprices
    steps ``mispriced`` times: the wall-clock limit of each launch stops it (the group
    checkpoints), whatever its step cap says."""
    job = Job(eval_every=10)
    summary = pl.DataFrame({"type": ["toy"] * 2, "workers": [2, 2], "local_bsz": [16, 256],
                            "step_time": [0.5, 8.0], "sync_time": [0.0, 0.0]})
    model = StepModel(summary, startup={"toy": 2.0}, overhead={"toy": 1.0})
    runner, clock = _clocked_runner(monkeypatch, model, job, mispriced, startup=2.0)
    planner = CurvePlanner([job], model, budget_s=200.0, quick=False, seeds=3, workers_max=2,
                           runner=runner, workdir=tmp_path)
    records = planner.execute()
    m0 = next(r for r in records if r.tier == "m0")
    assert clock[0] <= 200.0 + 10.0 + (m0.wall_s if mispriced > 1 else 0.0), clock[0]
    assert any(r.status == "skipped" for r in records)  # the budget did bind


def test_finishing_core_runs_comes_before_extra_seeds(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16 x M0 run that only got a probe in the core tier is resumed to its target
    even when that takes most of the budget: reaching the target at the core batch
    sizes matters more than extra seeds, which get what is left."""
    job = Job(eval_every=4)
    summary = pl.DataFrame({"type": ["toy"] * 2, "workers": [2, 2], "local_bsz": [16, 256],
                            "step_time": [0.05, 24.0], "sync_time": [0.0, 0.0]})
    model = StepModel(summary, startup={"toy": 0.0}, overhead={"toy": 1.0})
    launches: list[tuple[int, int, bool]] = []
    runner, clock = _clocked_runner(monkeypatch, model, job, launches=launches)
    planner = CurvePlanner([job], model, budget_s=1000.0, quick=False, seeds=2, workers_max=2,
                           runner=runner, workdir=tmp_path)
    records = planner.execute()
    big = next(r for r in records if r.run.batch_size == 512 and r.run.seed == 0)
    assert big.status == "reached" and big.launches >= 2, big
    resumed = launches.index((512, 0, True))
    assert big.wall_s > 0.15 * 1000.0  # more than a 15% finish tier could have given it
    assert all(i > resumed for i, (_, seed, _) in enumerate(launches) if seed == 1)
    assert clock[0] <= 1000.0
