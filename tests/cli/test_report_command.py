"""``coadapt report DIR``: every result file and report.md rebuilt from the logs."""

from __future__ import annotations

import json

import pytest
from reportlogs import three_policies

from coadapt.cli import main


def test_report_rebuilds_results_and_prints_the_table(tmp_path, capsys):
    three_policies(tmp_path)
    assert main(["report", str(tmp_path), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"SIMULATED: toy-wl on 2x2 (from {tmp_path})")
    assert "one sample (seed 3)" in out and "vs fixed" in out
    assert out.index("\nfixed ") < out.index("\npollux ") < out.index("\nslow ")
    assert f"report: {tmp_path / 'report.md'}" in out
    for p in ("fixed", "pollux", "slow"):
        s = json.loads((tmp_path / p / "summary.json").read_text())
        assert s["policy"] == p and (tmp_path / p / "jobs.csv").is_file()
    assert json.loads((tmp_path / "pollux" / "summary.json").read_text())["avg_jct"] == 50.0
    assert (tmp_path / "comparison.csv").read_text().count("\n") == 4
    assert (tmp_path / "report.md").is_file() and not (tmp_path / "figures").exists()


def test_report_baseline_flag(tmp_path, capsys):
    three_policies(tmp_path)
    assert main(["report", str(tmp_path), "--no-plots", "--baseline", "pollux"]) == 0
    out = capsys.readouterr().out
    assert "vs pollux" in out and out.index("\npollux ") < out.index("\nfixed ")


@pytest.mark.parametrize("setup", ["empty", "missing", "bad"])
def test_report_refuses_a_folder_without_readable_logs(tmp_path, capsys, setup):
    target = tmp_path / "out"
    if setup != "missing":
        target.mkdir()
    if setup == "bad":
        (target / "fixed").mkdir()
        (target / "fixed" / "events.jsonl").write_text('{"t": 0}\n')
    assert main(["report", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("coadapt report: error: ")
    assert {"empty": "no <policy>/events.jsonl", "missing": "not a folder",
            "bad": "events.jsonl:1: event lacks field"}[setup] in err


def test_report_help_ends_with_examples(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = capsys.readouterr().out
    assert "examples:" in text and text.rstrip().endswith("no figures")
    assert "coadapt report out/sim" in text


@pytest.mark.parametrize("damage,message", [
    ("headerless", "fixed/events.jsonl:1: no header (the first event is a 'submit')"),
    ("two-headers", "fixed/events.jsonl: holds 2 headers"),
    ("empty", "fixed/events.jsonl: empty: no header and no events"),
    ("other-workload", "its logs record different workloads (fixed: toy-wl, pollux: other"),
])
def test_report_refuses_logs_it_cannot_vouch_for(tmp_path, capsys, damage, message):
    three_policies(tmp_path)
    log = tmp_path / "fixed" / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    if damage == "headerless":
        log.write_text("".join(lines[1:]))
    elif damage == "two-headers":
        log.write_text("".join(lines + lines))
    elif damage == "empty":
        log.write_text("")
    else:
        other = tmp_path / "pollux" / "events.jsonl"
        other.write_text(other.read_text().replace('"workload":"toy-wl"', '"workload":"other"', 1))
    assert main(["report", str(tmp_path), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("coadapt report: error: ") and message in err, err


def test_report_names_unfinished_policies(tmp_path, capsys):
    three_policies(tmp_path)
    log = tmp_path / "pollux" / "events.jsonl"  # killed before its end
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
    (tmp_path / ".partial" / "sia").mkdir(parents=True)  # killed in its first minutes
    assert main(["report", str(tmp_path), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "unfinished: sia (in .partial/, not shown), pollux (unfinished)" in err
    assert "**Unfinished:** sia (in .partial/, not shown), pollux (unfinished)" in (
        tmp_path / "report.md").read_text()
