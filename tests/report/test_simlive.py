"""sim-vs-live comparison on hand-written event logs with known JCTs."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import polars as pl
import pytest

from coadapt.cli import compare as compare_command
from coadapt.eventlog import EventLog
from coadapt.report.simlive import (
    KIND_TITLES,
    CompareError,
    compare_dirs,
    compare_policy,
    compare_runs,
)
from coadapt.report.simlive_view import format_comparison, write_outputs

Jobs = dict[str, tuple[float, float | None]]  # job -> (submit, complete or None if unfinished)


SETTINGS = {"network": "10 Gbit/s, 50 us", "interval": 15.0, "seed": 0, "restart_delay": 3.2,
            "start_node": True, "tiresias_threshold": 600.0, "p": -1.0,
            "observation_noise": 0.0}


def write_run(root: Path, policy: str, mode: str, jobs: Jobs, *, workload: str = "toy-wl",
              cluster: str = "2x4", run_kind: str | None = "default", **settings) -> Path:
    """One <policy>/events.jsonl with submit/allocate/complete events at the given times;
    a header like the real ones (``settings`` override :data:`SETTINGS`; a value of
    None leaves the field out, as an older log would)."""
    path = root / policy / "events.jsonl"
    meta = {k: v for k, v in {**SETTINGS, **settings}.items() if v is not None}
    if run_kind == "default":
        run_kind = "simulation" if mode == "simulate" else None
    if run_kind is not None:
        meta["run_kind"] = run_kind
    with EventLog(path) as log:
        log.header(mode=mode, policy=policy, workload=workload, cluster=cluster, total_slots=8,
                   **meta)
        timed = []
        for job, (submit, complete) in jobs.items():
            timed.append((submit, "submit", job, {"application": "mlp"}))
            timed.append((submit, "allocate", job, {"replicas": 1, "allocation": [1], "batch": 64}))
            if complete is not None:
                timed.append((complete, "complete", job, {"restarts": 0, "verified": True}))
        for t, kind, job, fields in sorted(timed, key=lambda e: e[0]):
            log.emit(t, kind, job, **fields)
    return path


def scaled(jcts: list[float], factor: float) -> Jobs:
    """Jobs j1.. submitted at 0 with the given JCTs multiplied by factor."""
    return {f"j{i + 1}": (0.0, jct * factor) for i, jct in enumerate(jcts)}


# pollux: j1 +20%, j2 -10%, j3 +10%; j4 unfinished live; j5 never ran in sim.
POLLUX_LIVE: Jobs = {"j1": (0, 100), "j2": (10, 210), "j3": (20, 420), "j4": (30, None),
                     "j5": (40, 90)}
POLLUX_SIM: Jobs = {"j1": (0, 120), "j2": (10, 190), "j3": (20, 460), "j4": (30, 330)}
FIXED = [300.0, 600.0, 900.0]      # sim = 0.9 x live: every job -10%
DYNAMIC = [150.0, 300.0, 450.0]    # sim = 2 x live: every job +100%


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    sim, live = tmp_path / "sim", tmp_path / "live"
    write_run(sim, "pollux", "simulate", POLLUX_SIM)
    write_run(live, "pollux", "live", POLLUX_LIVE)
    write_run(sim, "fixed", "simulate", scaled(FIXED, 0.9))
    write_run(live, "fixed", "live", scaled(FIXED, 1.0))
    write_run(sim, "dynamic", "simulate", scaled(DYNAMIC, 2.0))
    write_run(live, "dynamic", "live", scaled(DYNAMIC, 1.0))
    write_run(live, "tiresias", "live", scaled(FIXED, 1.0))  # live only: reported, not compared
    return sim, live


def cli(argv: list[str]) -> int:
    """The subcommand through its own parser, as cli.py will wire it."""
    parser = argparse.ArgumentParser(prog="coadapt")
    compare_command.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_per_policy_errors_by_hand(dirs):
    result = compare_dirs(*dirs)
    by = {p.policy: p for p in result.policies}
    assert sorted(by) == ["dynamic", "fixed", "pollux"]
    assert result.only_live == ["tiresias"] and result.only_sim == []

    p = by["pollux"]
    assert (p.matched, p.jobs_sim, p.jobs_live) == (3, 4, 5)
    assert p.unfinished_live == ["j4"] and p.missing_sim == ["j5"]
    assert p.unfinished_sim == [] and p.missing_live == []
    assert p.mean_abs_err == pytest.approx(0.4 / 3)
    assert p.median_abs_err == pytest.approx(0.1)
    assert p.p90_abs_err == pytest.approx(0.18)  # numpy linear percentile of (.1, .1, .2)
    assert p.bias == pytest.approx(0.2 / 3)
    assert p.max_abs_err == pytest.approx(0.2) and p.max_abs_err_job == "j1"
    assert p.mean_jct_sim == pytest.approx(740 / 3) and p.mean_jct_live == pytest.approx(700 / 3)
    assert p.mean_jct_err == pytest.approx(740 / 700 - 1)
    assert p.median_jct_err == pytest.approx(180 / 200 - 1)
    # makespan over the matched jobs: first submit 0, last completion 460 vs 420
    assert (p.makespan_sim, p.makespan_live) == (460, 420)
    assert p.makespan_err == pytest.approx(460 / 420 - 1)

    f, d = by["fixed"], by["dynamic"]
    assert f.matched == 3 and f.unmatched == 0
    assert f.bias == pytest.approx(-0.1) and f.mean_abs_err == pytest.approx(0.1)
    assert f.mean_jct_err == pytest.approx(-0.1) and f.makespan_err == pytest.approx(-0.1)
    assert d.bias == pytest.approx(1.0) and d.median_abs_err == pytest.approx(1.0)
    assert d.p90_abs_err == pytest.approx(1.0) and d.mean_jct_err == pytest.approx(1.0)


def test_ranking_and_kendall_tau(dirs):
    r = compare_dirs(*dirs).ranking
    # live means: pollux 233, dynamic 300, fixed 600; simulated: pollux 247, fixed 540, dynamic 600
    assert r.live_order == ["pollux", "dynamic", "fixed"]
    assert r.sim_order == ["pollux", "fixed", "dynamic"]
    assert r.same is False
    assert r.kendall_tau == pytest.approx(1 / 3)  # 2 concordant pairs, 1 discordant


def test_two_policies_same_order_no_tau():
    def events(policy: str, mode: str, jobs: Jobs) -> list[dict]:
        out = [{"t": 0, "kind": "header", "job": None, "mode": mode, "workload": "w"}]
        for job, (s, c) in jobs.items():
            out += [{"t": s, "kind": "submit", "job": job, "application": "mlp"},
                    {"t": c, "kind": "complete", "job": job}]
        return out

    sim = {"a": events("a", "simulate", scaled([10, 20], 1)),
           "b": events("b", "simulate", scaled([30, 40], 1))}
    live = {"a": events("a", "live", scaled([10, 20], 1.5)),
            "b": events("b", "live", scaled([30, 40], 1.5))}
    r = compare_runs(sim, live).ranking
    assert r.sim_order == r.live_order == ["a", "b"] and r.same and r.kendall_tau is None


def test_compare_policy_rows_and_statuses():
    sim = [{"t": 0, "kind": "header", "job": None},
           {"t": 0, "kind": "submit", "job": "x", "application": "cnn"},
           {"t": 50, "kind": "complete", "job": "x"},
           {"t": 0, "kind": "submit", "job": "y", "application": "cnn"}]
    live = [{"t": 0, "kind": "header", "job": None},
            {"t": 0, "kind": "submit", "job": "x", "application": "cnn"},
            {"t": 40, "kind": "complete", "job": "x"},
            {"t": 0, "kind": "submit", "job": "y", "application": "cnn"},
            {"t": 70, "kind": "complete", "job": "y"}]
    res, rows = compare_policy("p", sim, live)
    assert rows.columns == ["policy", "job", "application", "jct_sim", "jct_live", "rel_err",
                            "status"]
    assert rows["status"].to_list() == ["matched", "unfinished_sim"]
    assert rows["rel_err"].to_list()[0] == pytest.approx(0.25) and rows["rel_err"][1] is None
    assert res.matched == 1 and res.unfinished_sim == ["y"] and res.bias == pytest.approx(0.25)


def test_command_writes_files_and_prints_table(dirs, tmp_path, capsys):
    sim, live = dirs
    out = tmp_path / "cmp"
    assert cli(["compare", "--sim", str(sim), "--live", str(live), "--out", str(out)]) == 0
    for name in ("sim_vs_live.csv", "sim_vs_live_summary.csv", "sim_vs_live.json",
                 "sim_vs_live.png"):
        assert (out / name).stat().st_size > 0, name

    jobs = pl.read_csv(out / "sim_vs_live.csv")
    assert jobs.columns[:6] == ["policy", "job", "application", "jct_sim", "jct_live", "rel_err"]
    assert jobs.height == 3 + 3 + 5  # every job of every compared policy, matched or not
    j1 = jobs.filter((pl.col("policy") == "pollux") & (pl.col("job") == "j1")).row(0, named=True)
    assert (j1["application"], j1["jct_sim"], j1["jct_live"]) == ("mlp", 120, 100)
    assert j1["rel_err"] == pytest.approx(0.2)
    j4 = jobs.filter((pl.col("policy") == "pollux") & (pl.col("job") == "j4")).row(0, named=True)
    assert j4["status"] == "unfinished_live" and j4["jct_live"] is None

    summary = pl.read_csv(out / "sim_vs_live_summary.csv")
    assert summary["policy"].to_list() == ["dynamic", "fixed", "pollux"]
    assert summary.filter(pl.col("policy") == "pollux")["unfinished_live"].item() == "j4"

    doc = json.loads((out / "sim_vs_live.json").read_text())
    assert doc["sim"]["dir"] == str(sim) and doc["live"]["dir"] == str(live)
    assert doc["sim"]["modes"] == ["simulate"] and doc["live"]["modes"] == ["live"]
    assert doc["live"]["workloads"] == ["toy-wl"] and doc["live"]["clusters"] == ["2x4"]
    assert doc["ranking"]["same"] is False
    assert doc["ranking"]["kendall_tau"] == pytest.approx(1 / 3)
    assert doc["only_live"] == ["tiresias"]
    pollux = next(p for p in doc["policies"] if p["policy"] == "pollux")
    assert pollux["max_abs_err_job"] == "j1" and pollux["missing_sim"] == ["j5"]

    text = capsys.readouterr().out
    assert "mean-JCT err" in text and "makespan err" in text
    assert "pollux" in text and "3/5" in text and "+5.7%" in text and "-10.0%" in text
    assert "ranking by mean JCT: live pollux < dynamic < fixed; simulated pollux < fixed < " \
           "dynamic (order differs, Kendall tau 0.33)" in text
    assert "pollux: missing in simulated: j5; unfinished in live: j4" in text


def test_default_out_is_a_new_folder_beside_the_live_one(dirs, capsys):
    sim, live = dirs
    before = sorted(p.relative_to(live) for p in live.rglob("*"))
    assert cli(["compare", "--sim", str(sim), "--live", str(live), "--no-plots"]) == 0
    out = live.parent / "compare-simulation-live"
    assert (out / "sim_vs_live.csv").exists() and (out / "sim_vs_live.json").exists()
    assert not (out / "sim_vs_live.png").exists()
    assert sorted(p.relative_to(live) for p in live.rglob("*")) == before  # live untouched
    assert not (sim / "sim_vs_live.csv").exists()
    assert f"results in {out}/" in capsys.readouterr().out


def test_out_inside_the_live_folder_needs_into_live(dirs, capsys):
    sim, live = dirs
    assert_fails(["compare", "--sim", str(sim), "--live", str(live)], live / "cmp", capsys,
                 "inside the live folder", "--into-live")
    assert cli(["compare", "--sim", str(sim), "--live", str(live), "--no-plots",
                "--into-live"]) == 0
    assert (live / "compare" / "simulation" / "sim_vs_live.csv").exists()


@pytest.mark.parametrize("kind", ["prediction", "sim-measured", "replay"])
def test_every_output_names_its_kind(tmp_path, capsys, kind):
    sim, live = tmp_path / kind, tmp_path / "live"
    for policy, factor in (("fixed", 1.1), ("pollux", 0.8)):
        write_run(sim, policy, "simulate", scaled(FIXED, factor), run_kind=kind)
        write_run(live, policy, "live", scaled(FIXED, 1.0))
    out = tmp_path / "cmp"
    assert cli(["compare", "--sim", str(sim), "--live", str(live), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{kind.upper()} {KIND_TITLES[kind].partition(' ')[2]}: {sim}")
    assert f"mean JCT {kind}" in text and f"; {kind} pollux < fixed" in text
    assert set(pl.read_csv(out / "sim_vs_live.csv")["kind"].to_list()) == {kind}
    assert pl.read_csv(out / "sim_vs_live_summary.csv")["kind"].to_list() == [kind, kind]
    doc = json.loads((out / "sim_vs_live.json").read_text())
    assert doc["kind"] == kind and doc["kind_title"] == KIND_TITLES[kind]
    assert compare_dirs(sim, live).kind == kind
    # the default folder names the kind too
    assert cli(["compare", "--sim", str(sim), "--live", str(live), "--no-plots"]) == 0
    assert (tmp_path / f"compare-{kind}-live" / "sim_vs_live.json").exists()


def test_figure_title_names_the_kind(tmp_path, monkeypatch):
    import matplotlib.figure

    titles: list[str] = []
    real = matplotlib.figure.Figure.suptitle
    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle",
                        lambda self, t, **kw: titles.append(t) or real(self, t, **kw))
    write_run(tmp_path / "r", "pollux", "simulate", scaled(FIXED, 1), run_kind="replay")
    write_run(tmp_path / "l", "pollux", "live", scaled(FIXED, 1))
    write_outputs(compare_dirs(tmp_path / "r", tmp_path / "l"), tmp_path / "o")
    assert titles == [f"{KIND_TITLES['replay']} vs live"]


def test_mixed_kinds_exit_2(tmp_path, capsys):
    write_run(tmp_path / "s", "fixed", "simulate", scaled(FIXED, 1), run_kind="prediction")
    write_run(tmp_path / "s", "pollux", "simulate", scaled(FIXED, 1), run_kind="replay")
    for policy in ("fixed", "pollux"):
        write_run(tmp_path / "l", policy, "live", scaled(FIXED, 1))
    assert_fails(["compare", "--sim", str(tmp_path / "s"), "--live", str(tmp_path / "l")],
                 tmp_path / "o", capsys, "different kinds", "prediction: fixed",
                 "replay: pollux")


def test_format_comparison_is_fixed_width(dirs):
    lines = format_comparison(compare_dirs(*dirs)).splitlines()
    header, rule, rows = lines[1], lines[2], lines[3:6]
    assert set(rule) <= {"-", " "} and all(len(r) == len(header) == len(rule) for r in rows)
    assert [r.split()[0] for r in rows] == ["dynamic", "fixed", "pollux"]


def assert_fails(argv: list[str], out: Path, capsys, *needles: str) -> str:
    assert cli(argv + ["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("coadapt compare: error: ")
    for needle in needles:
        assert needle in err, err
    assert not out.exists()  # nothing written
    return err


def test_missing_dir_exits_2(dirs, tmp_path, capsys):
    sim, _ = dirs
    nowhere = tmp_path / "nowhere"
    assert_fails(["compare", "--sim", str(sim), "--live", str(nowhere)], tmp_path / "o", capsys,
                 str(nowhere))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_fails(["compare", "--sim", str(empty), "--live", str(sim)], tmp_path / "o", capsys,
                 str(empty), "events.jsonl")


def test_no_common_policy_exits_2(tmp_path, capsys):
    write_run(tmp_path / "s", "pollux", "simulate", scaled(FIXED, 1))
    write_run(tmp_path / "l", "fixed", "live", scaled(FIXED, 1))
    assert_fails(["compare", "--sim", str(tmp_path / "s"), "--live", str(tmp_path / "l")],
                 tmp_path / "o", capsys, "no policy in both", str(tmp_path / "s"),
                 str(tmp_path / "l"), "pollux", "fixed")


def test_bad_log_line_names_file_and_line(dirs, tmp_path, capsys):
    sim, live = dirs
    bad = live / "fixed" / "events.jsonl"
    lines = bad.read_text().splitlines(keepends=True)
    lines.insert(2, "{not json\n")
    bad.write_text("".join(lines))
    assert_fails(["compare", "--sim", str(sim), "--live", str(live)], tmp_path / "o", capsys,
                 f"{bad}:3:")


def test_log_without_header_exits_2(dirs, tmp_path, capsys):
    sim, live = dirs
    path = sim / "fixed" / "events.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))
    assert_fails(["compare", "--sim", str(sim), "--live", str(live)], tmp_path / "o", capsys,
                 f"{path}:1:", "header")


def test_different_workloads_exit_2(tmp_path, capsys):
    s = write_run(tmp_path / "s", "pollux", "simulate", scaled(FIXED, 1), workload="philly-small")
    li = write_run(tmp_path / "l", "pollux", "live", scaled(FIXED, 1), workload="other")
    assert_fails(["compare", "--sim", str(tmp_path / "s"), "--live", str(tmp_path / "l")],
                 tmp_path / "o", capsys, str(s), str(li), "philly-small", "other")


@pytest.mark.parametrize(("field", "sim_value", "live_value"), [
    ("cluster", "4x4", "1x2"), ("interval", 60.0, 15.0), ("seed", 1, 0),
    ("restart_delay", 30.0, 3.2), ("start_node", False, True),
    ("tiresias_threshold", 57600.0, 600.0), ("network", "1 Gbit/s, 50 us", "10 Gbit/s, 50 us"),
    ("p", 1.0, -1.0), ("observation_noise", 0.5, 0.0)])
def test_different_settings_exit_2_naming_field_and_values(tmp_path, capsys, field, sim_value,
                                                            live_value):
    s = write_run(tmp_path / "s", "pollux", "simulate", scaled(FIXED, 1), **{field: sim_value})
    li = write_run(tmp_path / "l", "pollux", "live", scaled(FIXED, 1), **{field: live_value})
    assert_fails(["compare", "--sim", str(tmp_path / "s"), "--live", str(tmp_path / "l")],
                 tmp_path / "o", capsys, f"{field} differs", repr(sim_value), repr(live_value),
                 str(s), str(li))
    assert not (tmp_path / "compare-simulation-l").exists()


def test_float_noise_is_not_a_difference(tmp_path):
    write_run(tmp_path / "s", "pollux", "simulate", scaled(FIXED, 1), restart_delay=0.1 + 0.2)
    write_run(tmp_path / "l", "pollux", "live", scaled(FIXED, 1), restart_delay=0.3)
    assert compare_dirs(tmp_path / "s", tmp_path / "l").policies[0].matched == 3


def test_older_logs_without_settings_warn_but_compare(tmp_path, caplog):
    write_run(tmp_path / "s", "pollux", "simulate", scaled(FIXED, 1), run_kind=None,
              interval=None, seed=None)
    write_run(tmp_path / "l", "pollux", "live", scaled(FIXED, 1), seed=None)
    with caplog.at_level(logging.WARNING, logger="coadapt.report.simlive"):
        result = compare_dirs(tmp_path / "s", tmp_path / "l")
    assert result.kind == "simulation" and result.policies[0].matched == 3
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "not checked" in messages and "interval, seed" in messages
    assert "no run_kind" in messages


def test_live_side_must_be_live(tmp_path, capsys):
    write_run(tmp_path / "s", "pollux", "simulate", scaled(FIXED, 1))
    write_run(tmp_path / "t", "pollux", "simulate", scaled(FIXED, 1))
    assert_fails(["compare", "--sim", str(tmp_path / "s"), "--live", str(tmp_path / "t")],
                 tmp_path / "o", capsys, "not 'live'")


def test_compare_runs_without_common_policy_raises():
    with pytest.raises(CompareError, match="no policy in both"):
        compare_runs({"a": []}, {"b": []})
