"""How the simulator's cost grows with jobs and slots (SIMULATED runs).

For each point JOBS:SLOTS it writes a CPU workload of JOBS jobs made the way
philly-small is (small/medium/large = 60/25/15 %, requests tuned for the
cluster), arriving over a window that keeps the offered load at --load times
philly-small's (30 jobs in 30 min on 16 slots), then runs `coadapt simulate`
under each policy on SLOTS/2 nodes of 2 slots, each in its own process. Per
run: wall seconds, the process's peak memory (from wait4), the decision time
per round (median and p99, from the log's round events), the active jobs per
round (median, max) and the mean JCT. Writes OUT/scale.csv and
OUT/scale.png (log-log), and prints the table and, per policy, the growth of
wall time with jobs as a fitted exponent.

    .venv/bin/python benchmarks/scale.py [--points 160:64,640:256,2560:1024,10000:2048]
        [--policy fixed,pollux] [--load 1] [--out out/bench/scale] [--timeout 1800]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
CLASSES = "small=mlp-mnist1d,cnn-mnist1d;medium=transformer-text;large=lstm-text;xlarge=lstm-text"
MIX = "small=0.6,medium=0.25,large=0.15"
BASE_RATE = 30 / 0.5 / 16  # philly-small: jobs per hour per slot


def coadapt() -> list[str]:
    exe = Path(sys.executable).with_name("coadapt")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "coadapt.cli"]


def make_workload(jobs: int, slots: int, load: float, out: Path,
                  window_h: float | None = None) -> Path:
    """The workload file for a point (reused when present); ``window_h``
    instead of the load sets the arrival window directly."""
    tag = "" if window_h is None else f"-{window_h:g}h"
    path = out / f"w{jobs}-{slots}{tag}.csv"
    if not path.exists():
        if window_h is None:
            window_h = jobs / (BASE_RATE * slots * load)
        subprocess.run([*coadapt(), "workload", "generate", "--num-jobs", str(jobs),
                        "--window", f"{window_h:.6f}", "--mix", MIX, "--classes", CLASSES,
                        "--cluster", f"{slots // 2}x2", "--seed", "1", "--out", str(path)],
                       check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return path


def run_one(workload: Path, slots: int, policy: str, out: Path, timeout: float) -> dict:
    """One simulate in its own process; its wall time, peak RSS and log figures."""
    argv = [*coadapt(), "simulate", "--workload", str(workload), "--cluster", f"{slots // 2}x2",
            "--policy", policy, "--out", str(out), "--force", "--no-plots", "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            os.killpg(proc.pid, 9)
            _, status, usage = os.wait4(proc.pid, 0)
            return {"wall_s": None, "peak_mb": usage.ru_maxrss / 1024, "error": "timeout"}
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    row: dict = {"wall_s": wall, "peak_mb": usage.ru_maxrss / 1024,
                 "error": None if os.waitstatus_to_exitcode(status) == 0
                 else proc.stderr.read().decode()[-300:]}
    log = out / policy / "events.jsonl.gz"
    log = log if log.exists() else out / policy / "events.jsonl"
    if row["error"] is None and log.exists():
        row.update(log_figures(log))
    return row


def log_figures(path: Path) -> dict:
    """Decision times and active jobs per round, and the mean JCT, from the log."""
    ms, active, jct = [], [], []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if '"kind":"round"' in line:
                e = json.loads(line)
                ms.append(e["decision_ms"])
                active.append(e["active"])
            elif '"kind":"complete"' in line:
                jct.append(json.loads(line)["jct"])
    a, m = np.array(active), np.array(ms)
    busy = m[a >= max(1, int(np.percentile(a, 90)))] if len(a) else m
    return {"rounds": len(m), "active_median": float(np.median(a)) if len(a) else 0,
            "active_max": int(a.max()) if len(a) else 0,
            "decide_ms_median": float(np.median(m)) if len(m) else None,
            "decide_ms_p99": float(np.percentile(m, 99)) if len(m) else None,
            "decide_ms_busy_median": float(np.median(busy)) if len(busy) else None,
            "mean_jct_s": float(np.mean(jct)) if jct else None, "completed": len(jct)}


def exponent(df: pl.DataFrame, x: str, y: str) -> float | None:
    d = df.drop_nulls(y).filter(pl.col(y) > 0)
    if d.height < 2:
        return None
    return float(np.polyfit(np.log(d[x].to_numpy()), np.log(d[y].to_numpy()), 1)[0])


def figure(df: pl.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    pdf = df.to_dict(as_series=False)  # seaborn takes a dict of columns (no pyarrow)
    for ax, y, label in zip(axes, ("wall_s", "peak_mb", "decide_ms_median"),
                            ("wall time (s)", "peak memory (MB)", "decision per round, median (ms)"),
                            strict=True):
        sns.lineplot(data=pdf, x="jobs", y=y, hue="policy", marker="o", ax=ax)
        ax.set(xscale="log", yscale="log", xlabel="jobs (slots grow with them)", ylabel=label)
    fig.suptitle("coadapt simulator scaling (SIMULATED runs, one machine)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", default="160:64,640:256,2560:1024,10000:2048",
                    help="JOBS:SLOTS,... (default 160:64,640:256,2560:1024,10000:2048)")
    ap.add_argument("--policy", default="fixed,pollux")
    ap.add_argument("--load", type=float, default=1.0, help="offered load x philly-small's")
    ap.add_argument("--out", type=Path, default=REPO / "out" / "bench" / "scale")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for point in args.points.split(","):
        jobs, slots = (int(x) for x in point.split(":"))
        wl = make_workload(jobs, slots, args.load, args.out)
        for policy in args.policy.split(","):
            r = run_one(wl, slots, policy, args.out / f"run-{jobs}-{slots}", args.timeout)
            rows.append({"jobs": jobs, "slots": slots, "policy": policy, **r})
            sys.stdout.write(json.dumps(rows[-1]) + "\n")
            sys.stdout.flush()
            # the table so far after every run: an hour-long grid cut short keeps its rows
            df = pl.DataFrame(rows, infer_schema_length=None)
            df.write_csv(args.out / "scale.csv")
    figure(df, args.out / "scale.png")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200):
        sys.stdout.write(str(df.select("jobs", "slots", "policy", "wall_s", "peak_mb",
                                       "active_median", "active_max", "decide_ms_median",
                                       "decide_ms_p99", "mean_jct_s")) + "\n")
    for policy in args.policy.split(","):
        d = df.filter(pl.col("policy") == policy)
        grow = {y: exponent(d, "jobs", y) for y in ("wall_s", "peak_mb", "decide_ms_median")}
        if grow["wall_s"] is None:
            sys.stdout.write(f"{policy}: too few points for an exponent\n")
            continue
        sys.stdout.write(f"{policy}: as jobs (and slots with them) grow, wall time grows as "
                         f"jobs^{grow['wall_s']:.2f}, peak memory as jobs^{grow['peak_mb']:.2f}"
                         + (f", decision time as jobs^{grow['decide_ms_median']:.2f}"
                            if grow["decide_ms_median"] is not None else "") + "\n")
    sys.stdout.write(f"wrote {args.out / 'scale.csv'} and {args.out / 'scale.png'} "
                     "(SIMULATED runs)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
