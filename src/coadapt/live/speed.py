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

import statistics
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from coadapt.eventlog import read_events
from coadapt.models.batching import step_with_accum
from coadapt.profiles.profile import AppProfile

WARMUP = 3


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
    cache: dict[tuple[str, int, int, int], float] = {}
    for name, app in apps.items():
        path = run_dir / "jobs" / name / "events.jsonl"
        if not path.exists() or app not in profiles:
            continue
        for e in read_events(path):
            if e["kind"] != "observation" or e.get("run_step", 0) <= WARMUP:
                continue
            key = (app, int(e["workers"]), int(e["local_bsz"]), int(e["accum_steps"]))
            if configs is not None and key[1:3] not in configs.get(app, ()):
                continue
            if key not in cache:
                step, sync = profiles[app].throughput((key[1],), key[2])
                cache[key] = float(step_with_accum(step, sync, key[3]))
            ratios[app].append(float(e["step_time"]) / cache[key])
    return {app: statistics.median(v) for app, v in ratios.items() if v}
