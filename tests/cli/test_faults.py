"""Faults a user meets: a run killed midway, two runs into one folder, a rerun
into an old one. Each drives ``coadapt`` as a user would (a subprocess, killed
with SIGKILL: no cleanup runs) and checks what OUT holds afterwards: complete
results beside clearly unfinished ones, never two runs mixed, and a resume
that ends where an unbroken run ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from coadapt.eventlog import read_events

REPO = Path(__file__).resolve().parents[2]
SIM = ["simulate", "--workload", "cpu-load1", "--no-plots", "--no-progress"]
EXP = ["experiment", "--workload", "cpu-load1", "--policy", "fixed,pollux", "--seeds", "2",
       "--parallel", "1", "--no-progress"]


def coadapt(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "coadapt.cli", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def done(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def kill_when(proc: subprocess.Popen, ready, timeout: float = 120) -> None:
    """SIGKILL ``proc`` once ``ready()`` holds (it must not have ended first)."""
    end = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < end, "timed out waiting to kill"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def headers(path: Path) -> int:
    return sum(1 for e in read_events(path) if e["kind"] == "header")


def test_killed_simulate_leaves_complete_policies_and_resume_matches_an_unbroken_run(tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    policies = ["--policy", "fixed,dynamic,pollux"]
    assert done(coadapt(*SIM, *policies, "--out", str(whole)))[0] == 0
    proc = coadapt(*SIM, *policies, "--out", str(cut))
    kill_when(proc, lambda: (cut / "fixed" / "summary.json").exists()
              and (cut / ".partial").is_dir())
    assert (cut / "fixed" / "jobs.csv").is_file()  # complete, in place
    left = sorted(p.name for p in (cut / ".partial").iterdir())
    assert left and not any((cut / n / "summary.json").exists() for n in left)
    report = subprocess.run([sys.executable, "-m", "coadapt.cli", "report", str(cut), "--no-plots"],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert f"unfinished: {left[0]}" in report.stderr
    code, err = done(coadapt(*SIM, *policies, "--out", str(cut)))  # a plain rerun: refused
    assert code == 2 and "--force" in err and "--resume" in err
    code, err = done(coadapt(*SIM, *policies, "--out", str(cut), "--resume"))
    assert code == 0, err
    assert "kept the finished fixed" in err
    assert not (cut / ".partial").exists()
    for name in ("fixed", "dynamic", "pollux"):
        assert headers(cut / name / "events.jsonl") == 1
        assert (cut / name / "jobs.csv").read_bytes() == (whole / name / "jobs.csv").read_bytes()


def test_two_simulates_into_one_folder_one_is_refused(tmp_path):
    out = tmp_path / "out"
    a = coadapt(*SIM, "--policy", "fixed,pollux", "--out", str(out))
    b = coadapt(*SIM, "--policy", "fixed,pollux", "--interval", "30", "--out", str(out))
    (ca, ea), (cb, eb) = done(a), done(b)
    assert sorted([ca, cb]) == [0, 2], (ea, eb)
    refusal = ea if ca == 2 else eb
    assert "in use by 'coadapt simulate'" in refusal or "holds an earlier run" in refusal
    for name in ("fixed", "pollux"):  # one run's logs, whole
        assert headers(out / name / "events.jsonl") == 1
    config = (out / "config.toml").read_text()
    assert ("interval = 30.0" in config) == (cb == 0)


def test_force_replaces_a_run_whole_and_never_deletes_foreign_files(tmp_path):
    out = tmp_path / "out"
    assert done(coadapt(*SIM, "--policy", "fixed,pollux", "--out", str(out)))[0] == 0
    code, err = done(coadapt(*SIM, "--policy", "fixed", "--out", str(out), "--force"))
    assert code == 0, err
    assert not (out / "pollux").exists()  # replaced whole: nothing of the old run is left
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    code, err = done(coadapt(*SIM, "--policy", "fixed", "--out", str(mine), "--force"))
    assert code == 2 and "coadapt did not write" in err
    assert (mine / "thesis.tex").read_text() == "precious"
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]  # untouched


def test_resume_with_other_settings_is_refused(tmp_path):
    out = tmp_path / "out"
    assert done(coadapt(*SIM, "--policy", "fixed", "--out", str(out)))[0] == 0
    code, err = done(coadapt(*SIM, "--policy", "fixed", "--interval", "30", "--out", str(out),
                             "--resume"))
    assert code == 2 and "--interval: 15.0 there, 30.0 now" in err


def test_killed_experiment_resumes_to_the_unbroken_results(tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert done(coadapt(*EXP, "--out", str(whole)))[0] == 0
    proc = coadapt(*EXP, "--out", str(cut))
    cells = cut / "cells.jsonl"
    kill_when(proc, lambda: cells.exists() and len(cells.read_text().splitlines()) >= 2)
    scratch = [p for p in Path("/tmp").glob(f"coadapt-cell-{proc.pid}-*")]
    code, err = done(coadapt(*EXP, "--out", str(cut)))
    assert code == 2 and "--resume" in err  # a plain rerun would mix: refused
    code, err = done(coadapt(*EXP, "--out", str(cut), "--resume"))
    assert code == 0, err
    assert not any(p.exists() for p in scratch)  # a killed cell's scratch is removed at start

    def rows(d: Path) -> dict[str, float]:
        table = [json.loads(line) for line in (d / "cells.jsonl").read_text().splitlines()]
        return {r["key"]: r["avg_jct"] for r in table}

    assert rows(cut) == rows(whole) and len(rows(cut)) == 4


def test_two_experiments_into_one_folder_one_is_refused(tmp_path):
    out = tmp_path / "out"
    a, b = coadapt(*EXP, "--out", str(out)), coadapt(*EXP, "--out", str(out))
    (ca, ea), (cb, eb) = done(a), done(b)
    assert sorted([ca, cb]) == [0, 2], (ea, eb)
    lines = (out / "cells.jsonl").read_text().splitlines()
    assert len(lines) == 4 and len({json.loads(x)["key"] for x in lines}) == 4


def test_stale_scratch_of_dead_processes_is_removed(tmp_path):
    from coadapt.util.scratch import remove_stale

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (tmp_path / f"coadapt-cell-{dead}-abc").mkdir()
    (tmp_path / f"coadapt-cell-{os.getpid()}-def").mkdir()  # ours: alive, kept
    removed = remove_stale("coadapt-cell-", tmp_path)
    assert [p.name for p in removed] == [f"coadapt-cell-{dead}-abc"]
    assert (tmp_path / f"coadapt-cell-{os.getpid()}-def").is_dir()
