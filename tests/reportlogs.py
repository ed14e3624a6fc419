"""Hand-written run folders for the report tests: logs shaped like the real
ones (header, submit, allocate, start, complete, fairness, round, end) with
JCTs and T_iso's chosen so every number in a report is known."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coadapt.eventlog import EventLog

HEADER = {"workload": "toy-wl", "workload_path": "traces/toy-wl.csv", "cluster": "2x2",
          "total_slots": 4, "network": "10 Gbit/s, 50 us", "interval": 10.0,
          "restart_delay": 3.0, "seed": 3, "p": -1.0, "preset": None,
          "efficiency_truth": "curves", "profiles": {"toy": "toy profile (test)"}}
REFERENCE_CAL = {"file": "profiles/live-costs.json", "machine": "reference machine (host ref)",
                 "date": "2026-12-03", "reference": True, "this_machine": False,
                 "choice": "reference"}


@dataclass(frozen=True)
class Job:
    name: str
    submit: float
    complete: float | None  # None: never finished
    replicas: int = 2
    t_iso: float | None = None


def write_log(root: Path, policy: str, jobs: list[Job], *, mode: str = "simulate",
              **header: Any) -> Path:
    """``root/policy/events.jsonl`` for ``jobs``."""
    path = root / policy / "events.jsonl"
    end = max([j.complete or j.submit for j in jobs] + [0.0]) + 10.0
    with EventLog(path) as log:
        log.header(mode=mode, policy=policy, **{**HEADER, **header})
        timed: list[tuple[float, str, str | None, dict[str, Any]]] = []
        for j in jobs:
            timed.append((j.submit, "submit", j.name, {"application": "toy", "weight": 1.0}))
            timed.append((j.submit + 1.0, "allocate", j.name,
                          {"replicas": j.replicas, "allocation": [j.replicas, 0], "batch": 64}))
            timed.append((j.submit + 3.0, "start", j.name,
                          {"batch": 64, "truth": "measured", "goodput": 100.0}))
            if j.complete is not None:
                timed.append((j.complete, "complete", j.name, {"restarts": 0, "verified": None}))
        for t in range(0, int(end), 10):
            timed.append((float(t), "round", None, {"decision_ms": 0.5, "used_slots": 0}))
        for t, kind, job, fields in sorted(timed, key=lambda e: e[0]):
            log.emit(t, kind, job, **fields)
        for j in jobs:
            if j.t_iso is not None:
                log.emit(end, "fairness", j.name, share=2, n_avg=2.0, t_iso=j.t_iso)
        log.emit(end, "end", None, wall_s=0.25)
    return path


def three_policies(root: Path, **header: Any) -> Path:
    """fixed (mean JCT 100 s), pollux (50 s) and a 'slow' policy that
    finished no job; T_iso = 50 s for both jobs."""
    write_log(root, "fixed", [Job("a", 0.0, 100.0, t_iso=50.0), Job("b", 20.0, 120.0, t_iso=50.0)],
              **header)
    write_log(root, "pollux", [Job("a", 0.0, 50.0, 4, 50.0), Job("b", 20.0, 70.0, 4, 50.0)],
              **header)
    write_log(root, "slow", [Job("a", 0.0, None), Job("b", 20.0, None)], **header)
    return root


def live_folder(root: Path) -> Path:
    """A live folder: live.json, live logs, and the prediction written before."""
    (root / "live.json").parent.mkdir(parents=True, exist_ok=True)
    (root / "live.json").write_text(json.dumps({"workload": "toy-wl", "policy": "fixed"}))
    live_cal = {**REFERENCE_CAL, "copy": str(root / "calibration.json"),
                "about": "profiles/live-costs.json: ANOTHER machine's"}
    for policy, jct in (("fixed", 100.0), ("pollux", 60.0)):
        write_log(root, policy, [Job("a", 0.0, jct, t_iso=50.0), Job("b", 10.0, 10.0 + jct,
                                                                       t_iso=50.0)],
                  mode="live", host="box", cores=[0, 1], calibration=live_cal)
        write_log(root / "prediction", policy,
                  [Job("a", 0.0, jct * 1.2, t_iso=50.0), Job("b", 10.0, 10.0 + jct * 0.9,
                                                           t_iso=50.0)],
                  run_kind="prediction", calibration=REFERENCE_CAL)
    return root
