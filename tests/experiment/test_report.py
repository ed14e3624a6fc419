"""The experiment report on a tiny real grid: toy-profile cells run and filed
the way the experiment runs and files them (``runner.run_cell``, then
``runner.file_result``: gzip'd logs + rows)."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import polars as pl
import pytest
from toyprofile import make_toy

from coadapt.experiment.figures import FIGURES
from coadapt.experiment.grid import Cell
from coadapt.experiment.report import (
    _coverage_sentence,
    markdown_table,
    pick_example,
    read_log,
    summary_table,
    write_report,
)
from coadapt.experiment.runner import CELLS_FILE, CellContext, file_result, run_cell
from coadapt.experiment.stats import goals, summary
from coadapt.metrics import summarize
from coadapt.world.workload import JobSpec, Workload

PNG = b"\x89PNG\r\n\x1a\n"
SETS = ("toy-load1", "toy-load4")  # arrival loads 1.5x and 8x (runner.arrival_load)
OPTIONS = {"cluster": "2x2", "latency": 50.0, "interval": 60.0, "restart_delay": 30.0,
           "new_jobs": "one", "tiresias_threshold": "auto", "power": -1.0,
           "observation_noise": 0.0}
RHO = ("max_rho", "p99_rho", "unfair_frac", "jain_rho")


def workload(set_: str, seed: int) -> Workload:
    """3-4 toy jobs; the contended set packs them closer; the seed shifts arrivals."""
    light = set_ == "toy-load1"
    gap, n = (60.0, 3) if light else (10.0, 4)
    jobs = [JobSpec(f"j{i}", gap * i + 7.0 * seed, "toy", 1 + i % 2, 32 * (1 + i % 3))
            for i in range(n)]
    return Workload(set_, None, tuple(jobs))


def without_fairness(row: dict, blob: bytes) -> tuple[dict, bytes]:
    """The cell as a run without fairness would file it: no fairness events,
    no rho in the row."""
    lines = gzip.decompress(blob).decode().splitlines(keepends=True)
    kept = [ln for ln in lines if json.loads(ln)["kind"] != "fairness"]
    again = summarize([json.loads(ln) for ln in kept])
    assert all(again[k] is None for k in RHO)
    return {**row, **{k: again[k] for k in RHO}}, gzip.compress("".join(kept).encode())


def make_grid(out: Path, policies=("fixed", "dynamic", "pollux"), seeds=(0, 1),
              sets=SETS, fairness: bool = True, bandwidth: float = 10.0) -> pl.DataFrame:
    """Run and file every (set, seed, policy) cell through the runner."""
    profiles = {"toy": make_toy()}
    rows = []
    for set_ in sets:
        for seed in seeds:
            ctx = CellContext(profiles, None, OPTIONS, {set_: workload(set_, seed)}, "test")
            for policy in policies:
                row, blob = run_cell(ctx, Cell(bandwidth, set_, policy, seed))
                if not fairness:
                    row, blob = without_fairness(row, blob)
                file_result(out, row, blob)
                rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


@pytest.fixture(scope="module")
def grid_dir(tmp_path_factory) -> tuple[Path, pl.DataFrame]:
    out = tmp_path_factory.mktemp("exp")
    return out, make_grid(out)


@pytest.fixture(scope="module")
def grid_report(grid_dir) -> tuple[Path, pl.DataFrame, pl.DataFrame, pl.DataFrame, str]:
    """The grid's report, written once: (out, results, summary, goals, report text)."""
    out, results = grid_dir
    s = summary(results)
    g = goals(s)
    report = write_report(out, results, s, g)
    assert report == out / "report.md"
    return out, results, s, g, report.read_text()


def check_figures(out: Path) -> None:
    for name in FIGURES.values():
        png = out / "figures" / name
        assert png.is_file(), name
        assert png.stat().st_size > 1000 and png.read_bytes()[:8] == PNG, name


def test_report_of_a_small_real_grid(grid_report):
    out, _, s, g, text = grid_report
    assert text.startswith("# coadapt experiment report (SIMULATED)")
    assert "All numbers and figures in this report are SIMULATED" in text
    assert "| network | set | load | policy | seeds | mean JCT min [95% CI] |" in text
    for policy in ("fixed", "dynamic", "pollux"):
        assert f"| {policy} |" in text
    # The table carries the summary's numbers: pollux's mean JCT in minutes.
    p = s.filter((pl.col("policy") == "pollux") & (pl.col("set") == "toy-load4")).row(0, named=True)
    assert f"{p['avg_jct'] / 60:.2f} [{p['avg_jct_lo'] / 60:.2f}, {p['avg_jct_hi'] / 60:.2f}]" in text
    assert "## Goals" in text and g.height > 0
    assert (" met |" in text) or ("**missed**" in text)
    assert "cells: 12; simulated jobs: 42" in text
    assert "held the true mean in" in text
    assert "over 2 seeds (the most common seed count of the cells)" in text
    for name in FIGURES.values():
        assert f"](figures/{name})" in text
    check_figures(out)


def test_report_says_per_set_where_rho_measures_fairness(grid_report):
    _, results, s, _, text = grid_report
    assert "## Where rho carries information" in text
    # the yardstick is shared: every policy of a set and seed sees the same N and share
    per = results.group_by(["set", "seed"]).agg(pl.col("n_iso_mean").n_unique().alias("k"),
                                                pl.col("share_median").n_unique().alias("m"))
    assert per["k"].max() == 1 and per["m"].max() == 1
    for r in s.group_by("set").agg(pl.col("n_iso_mean").mean()).iter_rows(named=True):
        verdict = ("fairness: jobs share the cluster" if r["n_iso_mean"] >= 2.0
                   else "mostly efficiency")
        assert any(f"| {r['set']} |" in line and verdict in line for line in text.splitlines())


def test_example_defaults_to_pollux_on_the_most_contended_set(grid_dir):
    _, results = grid_dir
    ex = pick_example(results)
    assert (ex["policy"], ex["set"], ex["seed"]) == ("pollux", "toy-load4", 0)
    chosen = pick_example(results, {"set": "toy-load1", "seed": 1})
    assert (chosen["policy"], chosen["set"], chosen["seed"]) == ("pollux", "toy-load1", 1)
    assert pick_example(results, {"policy": "fixed", "set": "nope"})["policy"] == "fixed"


def test_cells_are_filed_as_the_runner_files_them(grid_dir):
    out, results = grid_dir
    filed = [json.loads(line) for line in (out / CELLS_FILE).read_text().splitlines()]
    assert [r["key"] for r in filed] == results["key"].to_list()
    assert results["simulated"].all() and (results["completed"] == results["jobs"]).all()
    loads = dict(results.select("set", "load").unique().iter_rows())
    assert loads["toy-load1"] < 2.0 <= loads["toy-load4"]  # light and contended


def test_the_summary_table_carries_the_time_split_and_restarts(grid_report):
    _, _, s, _, text = grid_report
    split = ("wait_mean", "run_mean", "delay_mean", "restarts_mean", "modeled_frac")
    assert set(split) <= set(s.columns)  # and so in summary.csv
    assert all(s[c].null_count() == 0 for c in split)  # the runner's rows carry them
    assert s["delay_mean"].min() > 0  # every job starts at least once
    assert ("| max rho mean (worst) | p99 rho | vs fixed [CI] | vs pollux [CI] | vs dynamic [CI] "
            "| wait s | run s | of it start/restart s | restarts/job | modeled |") in text
    assert "`vs pollux`" in text and "`p99 rho`" in text  # the paragraph explains them
    p = s.filter((pl.col("policy") == "pollux") & (pl.col("set") == "toy-load4")).row(0, named=True)
    assert (f"| {p['wait_mean']:.1f} | {p['run_mean']:.1f} | {p['delay_mean']:.1f} | "
            f"{p['restarts_mean']:.2f} | {p['modeled_frac']:.2f} |") in text


def test_logs_are_read_back_from_gzip_with_read_events_rules(grid_dir, tmp_path, caplog):
    out, results = grid_dir
    events = read_log(out / results["log"][0])
    assert events[0]["kind"] == "header"
    assert any(e["kind"] == "complete" for e in events)
    with caplog.at_level(logging.WARNING, logger="coadapt.experiment.report"):
        assert read_log(out / "logs" / "missing.jsonl.gz") is None
    assert "missing" in caplog.text
    good = '{"t":0,"kind":"header","job":null,"schema":1}\n{"t":1,"kind":"submit","job":"a"}\n'
    cut = tmp_path / "cut.jsonl.gz"  # crash mid-write: the unterminated last line is skipped
    cut.write_bytes(gzip.compress((good + '{"t":2,"ki').encode()))
    assert [e["kind"] for e in read_log(cut)] == ["header", "submit"]
    for name, text in (("bad.jsonl.gz", good + "not json\n"),  # a terminated bad line
                       ("nokind.jsonl.gz", good + '{"t":3}\n'),  # lacks 'kind'
                       ("newer.jsonl.gz", good.replace('"schema":1', '"schema":99'))):
        (tmp_path / name).write_bytes(gzip.compress(text.encode()))
        assert read_log(tmp_path / name) is None, name
    # a cut gzip stream (a killed run's log) reads, as a cut plain log does, up to its
    # last whole line; a stream that is not gzip at all is refused
    (tmp_path / "broken.jsonl.gz").write_bytes(gzip.compress((good * 50).encode())[:-12])
    cut_events = read_log(tmp_path / "broken.jsonl.gz")
    assert cut_events is not None and 2 <= len(cut_events) <= 100
    (tmp_path / "junk.jsonl.gz").write_bytes(b"\x1f\x8bnot a gzip stream at all")
    assert read_log(tmp_path / "junk.jsonl.gz") is None
    (tmp_path / "plain.jsonl").write_text(good)
    assert len(read_log(tmp_path / "plain.jsonl")) == 2


def test_one_policy_one_seed_no_fairness_and_a_missing_log(tmp_path):
    results = make_grid(tmp_path, policies=("pollux",), seeds=(0,), sets=("toy-load4",),
                        fairness=False)
    extra = make_grid(tmp_path, policies=("pollux",), seeds=(0,), sets=("toy-load1",),
                      fairness=False, bandwidth=1.0)
    (tmp_path / extra["log"][0]).unlink()
    results = pl.concat([results, extra], how="diagonal_relaxed")
    s = summary(results)
    report = write_report(tmp_path, results, s, goals(s))
    text = report.read_text()
    assert "No goal applies" in text
    assert "one seed only" in text
    assert "| 1gbps |" in text and "| 10gbps |" in text
    assert text.index("| 1gbps |") < text.index("| 10gbps |")  # numeric bandwidth order
    check_figures(tmp_path)


def test_an_empty_grid_still_writes_a_report(tmp_path):
    results = pl.DataFrame()
    s = summary(results)
    report = write_report(tmp_path, results, s, goals(s))
    assert "(no cells)" in report.read_text()
    check_figures(tmp_path)


def test_coverage_rests_on_the_named_sets_not_a_single_seed_csv_workload():
    named = [{"tag": "10gbps", "bandwidth": 10.0, "set": "cpu-load4", "load": 4.0,
              "policy": "pollux", "seed": s, "avg_jct": 100.0 + 10 * s} for s in range(1, 6)]
    csv = [{**named[0], "set": "tiny", "load": 1.5}]  # a CSV workload: one seed
    text = _coverage_sentence(summary(pl.DataFrame(named + csv)))
    assert "one seed only" not in text
    assert "over 5 seeds (the named workload sets' cells)" in text
    assert "1 cell(s) ran fewer seeds (sets: tiny)" in text
    only_csv = _coverage_sentence(summary(pl.DataFrame(csv)))
    assert "one seed only (the most common seed count of the cells)" in only_csv


def test_markdown_table_formats_nulls_and_escapes_pipes():
    df = pl.DataFrame({"a": ["x|y", None], "b": [1.23456, None], "n": [3, 4]})
    table = markdown_table(df, {"b": "{:.1f}"})
    assert table.splitlines() == ["| a | b | n |", "|---|---|---|", "| x\\|y | 1.2 | 3 |",
                                  "| – | – | 4 |"]


def test_summary_table_shows_the_pollux_ratio_and_p99_rho():
    rows = [{"tag": "10gbps", "set": "cpu-load4", "load": 4.0, "policy": p, "seed": seed,
             "avg_jct": jct, "max_rho": 2.0, "p99_rho": rho}
            for p, jcts, rho in (("fixed", (100.0, 200.0), 3.0), ("sia", (75.0, 80.0), 1.25),
                                 ("pollux", (50.0, 160.0), 1.5))
            for seed, jct in enumerate(jcts)]
    t = summary_table(summary(pl.DataFrame(rows)))
    cols = t.columns
    assert cols.index("p99 rho") == cols.index("max rho mean (worst)") + 1
    assert cols.index("vs pollux [CI]") == cols.index("vs fixed [CI]") + 1
    by = {r["policy"]: r for r in t.iter_rows(named=True)}
    assert by["sia"]["vs pollux [CI]"].startswith(f"{(1.5 * 0.5) ** 0.5:.2f} [")  # 75/50, 80/160
    assert by["fixed"]["vs pollux [CI]"].startswith(f"{(2.0 * 1.25) ** 0.5:.2f} [")
    assert by["pollux"]["vs pollux [CI]"] == "1.00 [1.00, 1.00]"
    assert by["sia"]["p99 rho"] == "1.25" and by["fixed"]["p99 rho"] == "3.00"
    assert by["sia"]["vs dynamic [CI]"] == "–"  # dynamic did not run


def test_report_names_the_calibration_the_cells_charged(grid_report):
    text = grid_report[4]
    # the grid ran without a calibration: the report says so, from the cells' log headers
    assert "- machine calibration charged: none: jobs paid one fixed restart delay" in text
