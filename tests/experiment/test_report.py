"""The experiment report on a tiny real grid: toy-profile runs of the engine,
filed as the runner files them (gzip'd logs + rows)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from toyprofile import make_toy

from coadapt.engine.cluster import ClusterSpec
from coadapt.engine.run import RunSettings
from coadapt.eventlog import read_events
from coadapt.experiment.report import (
    FIGURES,
    markdown_table,
    pick_example,
    read_log,
    write_report,
)
from coadapt.experiment.stats import goals, summary
from coadapt.sim.run import simulate_policy
from coadapt.workloads.workload import JobSpec, Workload

try:
    from coadapt.metrics.breakdown import breakdown
except ImportError:  # pragma: no cover - rows then lack the split, as old rows may
    breakdown = None

PNG = b"\x89PNG\r\n\x1a\n"
SETS = {"toy-load1": 1.0, "toy-load4": 4.0}


def workload(tmp: Path, set_: str, seed: int) -> Workload:
    """3-4 toy jobs; the contended set packs them closer; the seed shifts arrivals."""
    gap = 60.0 if SETS[set_] < 2 else 10.0
    n = 3 if SETS[set_] < 2 else 4
    jobs = [JobSpec(f"j{i}", gap * i + 7.0 * seed, "toy", 1 + i % 2, 32 * (1 + i % 3))
            for i in range(n)]
    return Workload(set_, tmp / f"{set_}.csv", tuple(jobs))


def make_grid(out: Path, policies=("fixed", "dynamic", "pollux"), seeds=(0, 1),
              sets=tuple(SETS), fairness: bool = True, tag: str = "10gbps",
              bandwidth: float = 10.0) -> pl.DataFrame:
    rows = []
    settings = RunSettings(ClusterSpec.parse("2x2"), interval=60.0, restart_delay=30.0,
                           show_progress=False, fairness=fairness)
    for set_ in sets:
        for seed in seeds:
            for policy in policies:
                key = f"{tag}__{set_}__{policy}__s{seed}"
                run_dir = out / "tmp" / key
                s = simulate_policy(workload(out, set_, seed), {"toy": make_toy()}, policy,
                                    settings, run_dir)
                raw = (run_dir / "events.jsonl").read_bytes()
                (out / "logs").mkdir(parents=True, exist_ok=True)
                (out / "logs" / f"{key}.jsonl.gz").write_bytes(gzip.compress(raw))
                extra = (breakdown(list(read_events(run_dir / "events.jsonl"))) if breakdown
                         else {"wait_mean": None, "run_mean": None, "modeled_frac": None})
                rows.append({"key": key, "tag": tag, "bandwidth": bandwidth, "set": set_,
                             "load": SETS[set_], **s, "policy": policy, "seed": seed, **extra,
                             "log": f"logs/{key}.jsonl.gz"})
    with open(out / "cells.jsonl", "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def grid_dir(tmp_path_factory) -> tuple[Path, pl.DataFrame]:
    out = tmp_path_factory.mktemp("exp")
    return out, make_grid(out)


def check_figures(out: Path) -> None:
    for name in FIGURES.values():
        png = out / "figures" / name
        assert png.is_file(), name
        assert png.stat().st_size > 1000 and png.read_bytes()[:8] == PNG, name


def test_report_of_a_small_real_grid(grid_dir):
    out, results = grid_dir
    s = summary(results)
    g = goals(s)
    report = write_report(out, results, s, g)
    assert report == out / "report.md"
    text = report.read_text()
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
    assert "held the true mean in" in text and "seeds" in text
    for name in FIGURES.values():
        assert f"](figures/{name})" in text
    check_figures(out)


def test_example_defaults_to_pollux_on_the_most_contended_set(grid_dir):
    _, results = grid_dir
    ex = pick_example(results)
    assert (ex["policy"], ex["set"], ex["seed"]) == ("pollux", "toy-load4", 0)
    chosen = pick_example(results, {"set": "toy-load1", "seed": 1})
    assert (chosen["policy"], chosen["set"], chosen["seed"]) == ("pollux", "toy-load1", 1)
    assert pick_example(results, {"policy": "fixed", "set": "nope"})["policy"] == "fixed"


def test_logs_are_read_back_from_gzip(grid_dir):
    out, results = grid_dir
    events = read_log(out / results["log"][0])
    assert events[0]["kind"] == "header"
    assert any(e["kind"] == "complete" for e in events)
    assert read_log(out / "logs" / "missing.jsonl.gz") is None


def test_one_policy_one_seed_no_fairness_and_a_missing_log(tmp_path):
    results = make_grid(tmp_path, policies=("pollux",), seeds=(0,), sets=("toy-load4",),
                        fairness=False)
    extra = make_grid(tmp_path, policies=("pollux",), seeds=(0,), sets=("toy-load1",),
                      fairness=False, tag="1gbps", bandwidth=1.0)
    (tmp_path / extra["log"][0]).unlink()
    results = pl.concat([results, extra])
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


def test_markdown_table_formats_nulls_and_escapes_pipes():
    df = pl.DataFrame({"a": ["x|y", None], "b": [1.23456, None], "n": [3, 4]})
    table = markdown_table(df, {"b": "{:.1f}"})
    assert table.splitlines() == ["| a | b | n |", "|---|---|---|", "| x\\|y | 1.2 | 3 |",
                                  "| – | – | 4 |"]
