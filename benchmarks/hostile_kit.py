"""The kit of benchmarks/hostile.py: how a case is run (its own session, its
process group killed on timeout), the files a case sets up, and the special
runners (two runs at once, a run killed midway)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
P = str(REPO / "profiles")
HEAD = "name,time,application,num_replicas,batch_size"
J1, J2 = "j1,0,mlp-mnist1d,1,32", "j2,5,cnn-mnist1d,2,64"
OTHER = ["k1,0,cnn-mnist1d,1,32", "k2,9,mlp-mnist1d,2,64"]
_EXE = Path(sys.executable).with_name("coadapt")  # the venv's entry point
CLI = [str(_EXE)] if _EXE.exists() else [sys.executable, "-m", "coadapt.cli"]


def sim(*extra: str, policy: str = "fixed", out: str = "out", wl: str = "w.csv") -> list[str]:
    return ["simulate", "--workload", wl, "--profiles", P, "--policy", policy, "--cluster", "1x2",
            "--no-plots", "--no-progress", "--out", out, *extra]


def exp(*extra: str, out: str = "out", wl: str = "w.csv") -> list[str]:
    return ["experiment", "--workloads", wl, "--profiles", P, "--policy", "fixed", "--seeds", "1",
            "-j", "1", "--cluster", "1x2", "--no-progress", "--out", out, *extra]


def live(*extra: str, wl: str = "w.csv") -> list[str]:
    return ["live", "--workload", wl, "--profiles", P, "--policy", "fixed", "--cluster", "1x2",
            "--calibration", "reference", "--no-compare", "--no-status", "--out", "out", *extra]


@dataclass
class Result:
    code: str
    secs: float
    out: str = ""
    err: str = ""
    problems: list[str] = field(default_factory=list)
    msg: str | None = None


@dataclass
class Case:
    cause: int
    name: str
    argv: list[str]
    expect: str = "refuse"  # refuse | ok | either
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path, Result], list[str]] | None = None
    timeout: float | None = None
    runner: Callable[[Case, Path, float], Result] | None = None
    mention: str | None = None  # the refusal must name this


def run(argv: list[str], cwd: Path, timeout: float) -> Result:
    """Run coadapt in its own session; on timeout kill the whole process group."""
    t0 = time.monotonic()
    p = spawn(argv, cwd)
    try:
        out, err = p.communicate(timeout=timeout)
        code = str(p.returncode)
    except subprocess.TimeoutExpired:
        killpg(p)
        out, err = p.communicate()
        code = "TIMEOUT"
    killpg(p)  # leftovers (worker processes) of a finished run too
    return Result(code, time.monotonic() - t0, out, err)


def spawn(argv: list[str], cwd: Path, pipe: int = subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([*CLI, *argv], cwd=cwd, text=True, errors="replace", stdout=pipe,
                            stderr=pipe, stdin=subprocess.DEVNULL, start_new_session=True)


def killpg(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def pre(d: Path, argv: list[str]) -> None:
    r = run(argv, d, 180)
    if r.code != "0":
        raise RuntimeError(f"setup `coadapt {argv[0]}` exit {r.code}: {first_line(r)}")


def first_line(r: Result) -> str:
    """The line saying 'error:' if any (argparse prints its usage first), else the first."""
    for line in r.err.splitlines():
        if "error:" in line:
            return line.strip()[:140]
    for text in (r.err, r.out):
        for line in text.splitlines():
            if line.strip():
                return line.strip()[:140]
    return ""


# --- setups -----------------------------------------------------------------------------

def write(rows: list[str], name: str = "w.csv", *, enc: str = "utf-8", nl: str = "\n",
          header: str = HEAD) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        (d / name).write_bytes(nl.join([header, *rows, ""]).encode(enc))
    return setup


def chain(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        for s in steps:
            s(d)
    return setup


W = write([J1, J2])
W2 = write(OTHER, "w2.csv")


def prerun(argv: list[str]) -> Callable[[Path], None]:
    return lambda d: pre(d, argv)


def copy(src: str, dst: str) -> Callable[[Path], None]:
    return lambda d: shutil.copytree(d / src, d / dst) and None


def files(spec: dict[str, str | None]) -> Callable[[Path], None]:
    """Folders (None) and text files, in order."""
    def setup(d: Path) -> None:
        for name, text in spec.items():
            (d / name).mkdir() if text is None else (d / name).write_text(text)
    return setup


def strip_header(path: str) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        f = d / path
        f.write_text("".join(f.read_text().splitlines(keepends=True)[1:]))
    return setup


def copy_profiles(d: Path) -> Path:
    dst = d / "prof"
    shutil.copytree(P, dst, ignore=shutil.ignore_patterns("*.png"))
    return dst


def mangle_json(path: str, fn: Callable[[dict], None], src: str | None = None) -> Callable:
    def setup(d: Path) -> None:
        f = d / path
        data = json.loads(Path(src).read_text() if src else f.read_text())
        fn(data)
        f.write_text(json.dumps(data))
    return setup


def nan_all(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: nan_all(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [nan_all(v) for v in obj]
    return float("nan") if isinstance(obj, float) else obj


def set_perf(value: float) -> Callable[[dict], None]:
    def fn(data: dict) -> None:
        data["perf_params"] = {k: value for k in data["perf_params"]}
    return fn


def nan_curves(d: Path) -> None:
    f = d / "prof/mlp-mnist1d/curves.csv"
    rows = list(csv.DictReader(f.open()))
    rows[1]["metric"], rows[2]["grad_sqr"] = "nan", "nan"
    with f.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def bom_profile(d: Path) -> None:
    for name in ("placements.csv", "curves.csv"):
        f = d / "prof/mlp-mnist1d" / name
        f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())


def checkpoint(truncate: bool) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        ck = d / "ck"
        if truncate:
            pre(d, ["job", "run", "mlp-mnist1d", "--ckpt", "ck", "--max-steps", "3", "--no-verify"])
            data = (ck / "ckpt.pt").read_bytes()
            (ck / "ckpt.pt").write_bytes(data[: len(data) // 2])
        else:
            ck.mkdir()
            (ck / "ckpt.pt").write_bytes(os.urandom(4096))
    return setup


def fake_live_header(path: str) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        f = d / path
        lines = f.read_text().splitlines(keepends=True)
        head = json.loads(lines[0])
        head.update(mode="live", run_kind="live")
        f.write_text(json.dumps(head) + "\n" + "".join(lines[1:]))
    return setup


# --- checks and runners -----------------------------------------------------------------

def escape_targets(d: Path) -> list[Path]:
    dirs = [d, *d.parents, Path("/tmp")]
    return [x / n for x in dirs for n in ("hostile-x", "hostile-x-abs")]


def out_untouched(d: Path, r: Result) -> list[str]:
    o = d / "out"
    return [f"OUT written: {sorted(p.name for p in o.iterdir())[:5]}"] if o.is_dir() and any(
        o.iterdir()) else []


def concurrent(case: Case, d: Path, timeout: float) -> Result:
    t0 = time.monotonic()
    procs = [spawn(case.argv, d) for _ in (0, 1)]
    res = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1.0, timeout - (time.monotonic() - t0)))
            res.append(Result(str(p.returncode), 0, out, err))
        except subprocess.TimeoutExpired:
            killpg(p)
            out, err = p.communicate()
            res.append(Result("TIMEOUT", 0, out, err))
        killpg(p)
    codes = sorted(r.code for r in res)
    r = Result("+".join(r.code for r in res), time.monotonic() - t0,
               "".join(x.out for x in res), "".join(x.err for x in res))
    refused = [x for x in res if x.code == "2"]
    r.msg = first_line(refused[0]) if refused else first_line(res[0])
    if codes != ["0", "2"]:
        r.problems.append(f"want one 0 and one 2, got {r.code}")
    return r


def killed_then_report(case: Case, d: Path, timeout: float) -> Result:
    p = spawn(case.argv, d, subprocess.DEVNULL)
    time.sleep(3)
    early = p.poll()
    killpg(p)
    p.wait()
    r = run(["report", "out", "--no-plots"], d, timeout)
    if early is not None:
        r.problems.append(f"simulate ended before the kill (exit {early})")
    if "unfinished" not in (r.out + r.err).lower():
        r.problems.append("report does not say 'unfinished'")
    return r


