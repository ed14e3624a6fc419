"""The experiment's grid, runner and command: real (small) simulations."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from coadapt.cli import main
from coadapt.experiment.grid import Cell, build_grid, code_digest, fingerprint, unique
from coadapt.experiment.runner import CELLS_FILE, finished

ROOT = Path(__file__).resolve().parents[2]
PROFILES = str(ROOT / "profiles")


def small_csv(tmp_path: Path, n: int = 4) -> Path:
    path = tmp_path / "tiny.csv"
    rows = ["name,time,application,num_replicas,batch_size"]
    apps = ["mlp-mnist1d", "cnn-mnist1d"]
    rows += [f"j{i},{i * 20},{apps[i % 2]},{1 + i % 2},{64 if i % 2 else 32}" for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_grid_runs_every_combination_once_and_csv_workloads_at_one_seed():
    cells = build_grid([10.0, 1.0], ["cpu-load2", "tiny"], ["fixed", "pollux"], [1, 2, 3],
                       {"tiny": False})
    assert len(cells) == 2 * 2 * (3 + 1)
    assert len({c.key for c in cells}) == len(cells)
    assert {c.seed for c in cells if c.workload == "tiny"} == {1}
    assert cells[0].tag == "1gbps"  # sorted numerically by bandwidth
    assert unique(["pollux", "fixed", "pollux"]) == ["pollux", "fixed"]


def test_fingerprint_and_code_digest_change_with_their_inputs(tmp_path):
    assert fingerprint({"a": 1}) == fingerprint({"a": 1}) != fingerprint({"a": 2})
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "x.py").write_text("A = 1\n")
    before = code_digest(tmp_path)
    (tmp_path / "engine" / "x.py").write_text("A = 2\n")
    assert code_digest(tmp_path) != before


def test_finished_keeps_only_rows_with_matching_settings_and_a_log(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl.gz").write_bytes(b"x")
    rows = [{"key": "a", "fingerprint": "F", "log": "logs/a.jsonl.gz"},
            {"key": "b", "fingerprint": "F", "log": "logs/b.jsonl.gz"},  # log missing
            {"key": "c", "fingerprint": "G", "log": "logs/a.jsonl.gz"}]  # other settings
    (tmp_path / CELLS_FILE).write_text("\n".join(json.dumps(r) for r in rows) + "\n{trunc")
    assert set(finished(tmp_path, "F")) == {"a"}


def test_experiment_command_writes_table_summary_report_and_resumes(tmp_path, capsys):
    csv = small_csv(tmp_path)
    out = tmp_path / "exp"
    argv = ["experiment", "--workloads", str(csv), "--policies", "fixed,dynamic,pollux",
            "--profiles", PROFILES, "--bandwidth", "1,100", "--jobs", "1", "--out", str(out),
            "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "SIMULATED" in printed and "pollux/fixed" in printed
    results = pl.read_parquet(out / "results.parquet")
    assert results.height == 3 * 2
    assert set(results["tag"]) == {"1gbps", "100gbps"}
    assert results["completed"].to_list() == [4] * 6
    assert (results["avg_jct"] > 0).all() and results["simulated"].all()
    for row in results.iter_rows(named=True):
        assert (out / row["log"]).stat().st_size > 0
    summary = pl.read_csv(out / "summary.csv")
    assert summary.filter(pl.col("policy") == "fixed")["vs_fixed"].to_list() == [1.0, 1.0]
    assert (out / "report.md").exists() and (out / "goals.csv").exists()
    # Same folder without --resume: refused, nothing lost.
    assert main(argv) == 2
    assert "--resume" in capsys.readouterr().err
    assert pl.read_parquet(out / "results.parquet").height == 6
    # --resume with the same settings runs nothing new and reproduces the table.
    lines = (out / CELLS_FILE).read_text().count("\n")
    assert main([*argv, "--resume"]) == 0
    assert (out / CELLS_FILE).read_text().count("\n") == lines
    again = pl.read_parquet(out / "results.parquet")
    assert again.sort("key")["avg_jct"].to_list() == results.sort("key")["avg_jct"].to_list()
    # Changed settings (another round length) make every old row stale.
    assert main([*argv, "--resume", "--interval", "20"]) == 0
    assert (out / CELLS_FILE).read_text().count("\n") == 2 * lines


@pytest.mark.parametrize("extra, message", [
    (["--interval", "0"], "--interval"),
    (["--policies", "fixed,nope"], "unknown policy"),
    (["--workloads", "no-such-set"], "no-such-set"),
    (["--seeds", "0"], "--seeds"),
    (["--bandwidth", "0"], "bandwidth"),
    (["--bandwidth", ","], "--bandwidth"),
    (["--workloads", ","], "--workloads: no workload"),
])
def test_bad_options_fail_once_with_a_clear_message(tmp_path, capsys, extra, message):
    argv = ["experiment", "--workloads", "cpu-load1", "--profiles", PROFILES,
            "--out", str(tmp_path / "x"), "--no-progress", *extra]
    try:
        code = main(argv)
    except SystemExit as exc:  # refused by the parser itself (a flag's type)
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x" / CELLS_FILE).exists()


def _children(pid: int) -> set[int]:
    out = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out |= {int(x) for x in text}
    return out


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_a_csv_may_not_shadow_a_named_set(tmp_path, capsys):
    shadow = tmp_path / "cpu-load1.csv"
    shadow.write_text(small_csv(tmp_path).read_text())
    assert main(["experiment", "--workloads", f"cpu-load1,{shadow}", "--profiles", PROFILES,
                 "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert "already taken by a named set" in capsys.readouterr().err


def test_csv_workloads_run_every_seed_when_reports_are_noisy(tmp_path):
    csv = small_csv(tmp_path, 2)
    out = tmp_path / "exp"
    assert main(["experiment", "--workloads", str(csv), "--policies", "pollux", "--seeds", "2",
                 "--observation-noise", "2", "--profiles", PROFILES, "--jobs", "1",
                 "--out", str(out), "--no-progress"]) == 0
    results = pl.read_parquet(out / "results.parquet")
    assert sorted(results["seed"]) == [1, 2]


@pytest.mark.parametrize("sig, jobs", [(signal.SIGINT, 2), (signal.SIGTERM, 2),
                                       (signal.SIGTERM, 1)])
def test_signal_stops_every_worker_and_resume_completes(tmp_path, sig, jobs):
    csv = small_csv(tmp_path, 6)
    out = tmp_path / "exp"
    argv = [sys.executable, "-m", "coadapt.cli", "experiment", "--workloads", str(csv),
            "--profiles", PROFILES, "--bandwidth", "1,10,100", "--jobs", str(jobs),
            "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cells = out / CELLS_FILE
    deadline = time.monotonic() + 120
    while not (cells.exists() and cells.read_text().count("\n") >= 1):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no cell finished in 120 s"
        time.sleep(0.2)
    workers = _children(proc.pid)
    assert workers or jobs == 1  # in-process cells: the driver itself must stop
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "--resume" in err
    time.sleep(0.5)
    assert not [w for w in workers if _alive(w)], "a worker outlived the driver"
    filed = cells.read_text().count("\n")
    assert 1 <= filed < 15
    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert pl.read_parquet(out / "results.parquet").height == 15
    assert os.path.exists(out / "report.md")


def test_a_killed_worker_fails_its_cells_instead_of_hanging(tmp_path):
    csv = small_csv(tmp_path, 6)
    out = tmp_path / "exp"
    argv = [sys.executable, "-m", "coadapt.cli", "experiment", "--workloads", str(csv),
            "--profiles", PROFILES, "--bandwidth", "1,10,100", "--jobs", "2",
            "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    def workers() -> list[int]:  # pool workers, not multiprocessing's resource tracker
        return sorted(p for p in _children(proc.pid)
                      if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes())

    while not workers():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1.0)
    os.kill(workers()[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "cells failed" in err and "--resume" in err
    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert pl.read_parquet(out / "results.parquet").height == 15


def test_ray_runs_cells_on_a_local_instance(tmp_path):
    pytest.importorskip("ray")
    csv = small_csv(tmp_path, 2)
    out = tmp_path / "exp"
    assert main(["experiment", "--workloads", str(csv), "--policies", "fixed,pollux",
                 "--profiles", PROFILES, "--ray", "local", "--jobs", "2", "--out", str(out),
                 "--no-progress"]) == 0
    results = pl.read_parquet(out / "results.parquet")
    assert sorted(results["policy"]) == ["fixed", "pollux"]
    assert results["completed"].to_list() == [2, 2]


def test_cell_is_a_plain_value():
    c = Cell(10.0, "cpu-load1", "pollux", 3)
    assert c.key == "10gbps__cpu-load1__pollux__s3"
