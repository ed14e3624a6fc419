"""Shared helpers for the jobs benchmarks: run a launch, summarise its events."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from coadapt.eventlog import read_events
from coadapt.jobs.group import GroupResult, RunConfig, run_group
from coadapt.models.gradstats import noise_scale


def launch(job: str, workers: int, batch: int, ckpt: Path | None = None, **kw: Any
           ) -> tuple[GroupResult, list[dict[str, Any]], Path]:
    ckpt = ckpt or Path(tempfile.mkdtemp(prefix=f"bench-{job}-"))
    events = ckpt / "events.jsonl"
    res = run_group(RunConfig(job, workers, batch, ckpt, events=events, **kw))
    return res, list(read_events(events)), ckpt


def summarise(events: list[dict[str, Any]], m0: int, skip: int = 5) -> dict[str, Any]:
    obs = [e for e in events if e["kind"] == "observation"]
    steady = [e for e in obs if e["run_step"] > skip] or obs
    vals = [e for e in events if e["kind"] == "validation"]
    done = [e for e in events if e["kind"] == "complete"]

    def phi(e: dict[str, Any]) -> float:
        return noise_scale(e["grad_sqr"] or 0.0, e["grad_var"] or 0.0, m0)

    n = len(obs)
    first_obs_t = obs[0]["t"] - obs[0]["step_time"] if obs else 0.0
    return {
        "steps": n,
        "train_seconds": (obs[-1]["t"] - first_obs_t) if obs else 0.0,
        "samples": obs[-1]["samples"] if obs else 0,
        "progress": obs[-1]["progress"] if obs else 0.0,
        "step_time": statistics.median(e["step_time"] for e in steady) if obs else None,
        "sync_time": statistics.median(e["sync_time"] for e in steady) if obs else None,
        "cpu_time": statistics.median(e["cpu_time"] for e in steady) if obs else None,
        "phi": [phi(obs[i]) for i in (min(10, n - 1), n // 2, n - 1)] if n else [],
        "metrics": [(round(v["progress"], 1), round(v["metric"], 4)) for v in vals],
        "complete": done[-1] if done else None,
    }
