"""Workload generator after the Pollux study (its simulator's ``workload.py``).

Jobs arrive over a daytime window; each job's size class (by GPU-time) picks
its job type; its requested (replicas, batch) is a "hand-tuned" configuration:
drawn uniformly from those a practitioner would pick, i.e. whose estimated
JCT is under 12 h and whose scaling efficiency base/(R*JCT_R) is in (0.5, 0.8).
JCTs are priced at the simulator's truth in the world the workload is made
for (``World.estimated_jct``): a CPU profile's steps across nodes cost the
declared network's all-reduce, so a slower network tunes to fewer nodes.
Arrivals and classes come from the Philly trace when its path is given, or
from a seeded parametric model (Poisson arrivals, class mix) otherwise, so a
workload can be made without shipping any trace.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from coadapt.models.batching import JobLimits
from coadapt.util.atomic import atomic_write_bytes
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.world import World

CLASSES = ("small", "medium", "large", "xlarge")
# GPU-hour bounds of the classes in the Pollux study.
CLASS_BOUNDS_H = (1.0, 10.0, 100.0)
# The Pollux study's mapping from class to application.
ADAPTDL_CLASSES = {"small": ("cifar10", "ncf"), "medium": ("deepspeech2", "bert"),
                   "large": ("yolov3",), "xlarge": ("imagenet",)}
# Replica counts a practitioner tries.
REPLICAS = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48)

Row = tuple[str, float, str, int, int]  # name, time, application, replicas, batch


@dataclass(frozen=True)
class Arrival:
    time: float
    size_class: str


def philly_arrivals(path: Path, start_hour: int = 2, hours: int = 8) -> list[Arrival]:
    """Jobs of the Philly trace (duration >= 60 s, < 1000 GPU-hours) whose
    shifted time of day falls in the window; arrival = seconds into it."""
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            duration, gpu_time = float(row["duration"]), float(row["gpu_time"])
            if duration < 60 or gpu_time >= 1000 * 3600:
                continue
            ts = datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S")
            hour = (ts.hour - start_hour) % 24
            if hour >= hours:
                continue
            t = hour * 3600 + ts.minute * 60 + ts.second
            k = int(np.searchsorted(CLASS_BOUNDS_H, gpu_time / 3600, side="right"))
            out.append(Arrival(float(t), CLASSES[k]))
    return out


def parametric_arrivals(n: int, window_s: float, mix: dict[str, float],
                        rng: np.random.Generator) -> list[Arrival]:
    """n arrivals uniform over the window (a Poisson process conditioned on n)."""
    names = list(mix)
    p = np.array([mix[c] for c in names], dtype=float)
    times = np.sort(rng.uniform(0, window_s, n)).round()
    classes = rng.choice(names, size=n, p=p / p.sum())
    return [Arrival(float(t), str(c)) for t, c in zip(times, classes, strict=True)]


def configurations(world: World, app: str, lo: float = 0.5,
                   hi: float = 0.8) -> list[tuple[int, int]]:
    """(replicas, batch) a practitioner would pick for ``app`` in ``world``:
    best validated batch per R, kept when JCT < 12 h and scaling efficiency
    is in (lo, hi)."""
    limits, total_slots = world.limits[app], world.cluster.total_slots
    out, base = [], None
    for r in REPLICAS:
        if r > total_slots or r > limits.max_useful_replicas():
            break
        best = None
        for batch in sorted(world.profiles[app].validation):
            if batch < r * limits.min_local_bsz:
                continue
            jct = world.estimated_jct(app, r, batch)
            if best is None or jct < best[0]:
                best = (jct, batch)
        if best is None:
            continue
        if r == 1:
            base = best
        elif base is not None and best[0] < 12 * 3600 and lo < base[0] / best[0] / r < hi:
            out.append((r, best[1]))
    if not out and base is not None:
        out.append((1, base[1]))
    return out


def pick_app(classes: Mapping[str, tuple[str, ...]], size_class: str,
             profiles: Mapping[str, AppProfile], rng: np.random.Generator) -> str:
    """A job type of the size class (uniformly among those with a profile)."""
    apps = [x for x in classes.get(size_class, ()) if x in profiles]
    if not apps:
        raise ValueError(f"no job type for size class {size_class!r}; "
                         f"give one with --classes {size_class}=TYPE")
    return str(rng.choice(apps))


def user_choice(profile: AppProfile, limits: JobLimits, total_slots: int,
                rng: np.random.Generator, max_workers: int = 8) -> tuple[int, int]:
    """(replicas, batch) a user picks without tuning (the Pollux study's realistic
    variant): workers uniform in 1..``max_workers`` (within the cluster and the
    job's useful replicas), then any validated batch size those workers can
    run (>= workers x the smallest micro-batch, <= the job's largest batch)."""
    options: dict[int, list[int]] = {}
    top = min(max_workers, total_slots, limits.max_useful_replicas())
    for r in range(1, top + 1):
        batches = [b for b in sorted(profile.validation)
                   if r * limits.min_local_bsz <= b <= limits.max_batch_size]
        if batches:
            options[r] = batches
    if not options:
        raise ValueError("no validated batch size fits any worker count")
    workers = sorted(options)
    r = workers[int(rng.integers(len(workers)))]
    return r, options[r][int(rng.integers(len(options[r])))]


def generate(arrivals: list[Arrival], n: int, world: World,
             classes: Mapping[str, tuple[str, ...]], rng: np.random.Generator,
             tuned: bool = True, user_max_workers: int = 8,
             request_rng: np.random.Generator | None = None) -> list[Row]:
    """Sample n arrivals and give each a job type and a request: a configuration
    tuned on the world's cluster (its shape and its network), or with
    ``tuned=False`` one a user chose (``user_choice``). Requests are drawn from
    ``request_rng`` (default ``rng``): a separate stream keeps arrivals and job
    types the same when another cluster tunes other requests."""
    req = rng if request_rng is None else request_rng
    pick = rng.choice(len(arrivals), size=min(n, len(arrivals)), replace=False)
    chosen = sorted((arrivals[i] for i in pick), key=lambda a: a.time)
    configs: dict[str, list[tuple[int, int]]] = {}
    rows = []
    for idx, a in enumerate(chosen):
        app = pick_app(classes, a.size_class, world.profiles, rng)
        if not tuned:
            r, b = user_choice(world.profiles[app], world.limits[app], world.cluster.total_slots,
                               req, user_max_workers)
        else:
            if app not in configs:
                configs[app] = configurations(world, app)
            r, b = configs[app][int(req.integers(len(configs[app])))]
        rows.append((f"{app}-{idx}", a.time, app, r, b))
    return rows


def write_workload(path: Path, rows: list[Row], weights: list[float] | None = None) -> None:
    """The AdaptDL CSV, written atomically (a killed run leaves the old file or
    the new one); a ``weight`` column only when some job's weight is not 1."""
    path.parent.mkdir(parents=True, exist_ok=True)
    weighted = weights is not None and any(w != 1.0 for w in weights)
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["name", "time", "application", "num_replicas", "batch_size",
                *(["weight"] if weighted else [])])
    for i, (name, t, app, r, b) in enumerate(rows):
        w.writerow([name, int(t), app, r, b, *([f"{weights[i]:g}"] if weighted else [])])
    atomic_write_bytes(path, buf.getvalue().encode("utf-8"))
