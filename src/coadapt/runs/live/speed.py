"""How fast a live run's steps really were, against the simulator's truth.

On a shared machine a job type's steady step at one configuration drifted by
up to a third between two live runs ten minutes apart (the LSTM at 1 worker,
batch 8: 70 ms median in one run, 54 ms in the next, 52 ms calibrated). That
is the machine, not the simulator's model. This module measures it after the
fact, from the run's own worker events: per job type, the median over its
steady steps of (measured step) / (the simulator's step at that configuration).
A comparison simulated at that speed separates the model's error (restarts,
validations, completion, scheduling) from the machine's drift; it is labelled
as such, never passed off as a prediction.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path

import polars as pl

from coadapt.eventlog import read_events
from coadapt.models.batching import step_with_accum
from coadapt.util.paths import inside
from coadapt.world.profiles.profile import AppProfile

WARMUP = 3


def _steady_ratios(run_dir: Path, profiles: Mapping[str, AppProfile], apps: Mapping[str, str],
                   configs: Mapping[str, set[tuple[int, int]]] | None
                   ) -> Iterator[tuple[str, float, float]]:
    """(type, wall time, measured step / simulated step) of every steady step."""
    cache: dict[tuple[str, int, int, int], float] = {}
    for name, app in apps.items():
        d = inside(run_dir / "jobs", name)
        path = d / "events.jsonl"
        if not path.exists() or app not in profiles:
            continue
        try:
            wall0 = float(json.loads((d / "job.json").read_text())["first_start_wall"])
        except (OSError, KeyError, ValueError):
            wall0 = 0.0
        for e in read_events(path):
            if e.get("kind") != "observation" or e.get("run_step", 0) <= WARMUP:
                continue
            try:
                key = (app, int(e["workers"]), int(e["local_bsz"]), int(e["accum_steps"]))
                measured = float(e["step_time"])
            except (KeyError, TypeError, ValueError):
                continue  # a malformed line: the live run skipped it too
            if configs is not None and key[1:3] not in configs.get(app, ()):
                continue
            if key not in cache:
                step, sync = profiles[app].throughput((key[1],), key[2])
                cache[key] = float(step_with_accum(step, sync, key[3]))
            yield app, wall0 + float(e["t"]), measured / cache[key]


def observed_speed(run_dir: Path, profiles: Mapping[str, AppProfile], apps: Mapping[str, str],
                   configs: Mapping[str, set[tuple[int, int]]] | None = None
                   ) -> dict[str, float]:
    """Per job type: median measured step / simulated step, over the steady
    steps of every job in ``run_dir/jobs/`` (``apps``: job name -> type).

    With ``configs`` only steps at those (workers, micro-batch) per type count:
    the ones the calibration measured, where the simulator's step is itself a
    measurement, so that the ratio is the machine's drift and not the timing
    grid's interpolation error at other sizes."""
    ratios: dict[str, list[float]] = defaultdict(list)
    for app, _t, ratio in _steady_ratios(run_dir, profiles, apps, configs):
        ratios[app].append(ratio)
    return {app: statistics.median(v) for app, v in ratios.items() if v}


DRIFT_SCHEMA = {"type": pl.Utf8, "minute": pl.Int64, "speed": pl.Float64, "steps": pl.Int64}


def speed_by_minute(run_dir: Path, profiles: Mapping[str, AppProfile], apps: Mapping[str, str],
                    configs: Mapping[str, set[tuple[int, int]]] | None = None) -> pl.DataFrame:
    """The drift: per job type and minute of the run (from the first step of
    any job), the median measured / calibrated step over that minute's steady
    steps. 1.0 is the machine as calibrated; 1.2 is 20% slower."""
    rows = list(_steady_ratios(run_dir, profiles, apps, configs))
    if not rows:
        return pl.DataFrame(schema=DRIFT_SCHEMA)
    t0 = min(t for _a, t, _r in rows)
    frame = pl.DataFrame({"type": [a for a, _t, _r in rows],
                          "minute": [int((t - t0) // 60) for _a, t, _r in rows],
                          "ratio": [r for _a, _t, r in rows]})
    return (frame.group_by("type", "minute")
            .agg(pl.col("ratio").median().alias("speed"), pl.len().cast(pl.Int64).alias("steps"))
            .sort("type", "minute").select(list(DRIFT_SCHEMA)))
