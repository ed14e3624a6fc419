"""What a live job pays besides its training steps, measured (``coadapt calibrate``).

The profiles time steady training steps on an otherwise idle machine. A live
job also pays for starting its processes, for every stop-and-relaunch, for
each validation and the checkpoint after it, for the fresh-process
verification at the end (its cores still held), and for sharing a node with
another job. ``profiles/live-costs.json`` holds those costs per job type and
worker count, measured on the machine that ran the profiles; the simulator
charges them when it is given them, and nothing is hand-set.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.profiles.profile import AppProfile

COSTS_FILE = "live-costs.json"
FORMAT = "coadapt-live-costs"
VERSION = 1


class CostError(ValueError):
    """A costs file is missing or malformed; the message names file and field."""


def _by_workers(table: Mapping[int, float], workers: int) -> float:
    """The value measured at ``workers``, else at the nearest measured count."""
    if workers in table:
        return table[workers]
    k = min(table, key=lambda w: (abs(w - workers), -w))
    return table[k]


@dataclass(frozen=True)
class StepPoint:
    """A steady step measured by the calibration, as one synchronizing step
    (the profile's ``placements.csv`` unit) on one node."""

    workers: int
    local_bsz: int
    step: float
    sync: float
    samples: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TypeCosts:
    """Seconds, per worker count (``start``: first launch until the first step
    is done, less one steady step; ``restart``: stop request until the first
    step of the relaunch is done, less one steady step; ``eval``: one
    validation plus the checkpoint after it), ``verify`` seconds, and the
    step-time factor ``colocation[other type]`` when another job shares the node."""

    start: dict[int, float]
    restart: dict[int, float]
    eval: dict[int, float]
    verify: float
    colocation: dict[str, float] = field(default_factory=dict)
    steps: list[StepPoint] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("start", "restart", "eval"):
            d[k] = {str(w): v for w, v in d[k].items()}
        return d


@dataclass(frozen=True)
class LiveCosts:
    types: dict[str, TypeCosts]
    meta: dict[str, Any] = field(default_factory=dict)
    speed: dict[str, float] = field(default_factory=dict)
    """Per type, profiled step times are scaled by this too (``scaled``)."""

    def start(self, app: str, workers: int) -> float:
        return _by_workers(self.types[app].start, workers)

    def restart(self, app: str, workers: int) -> float:
        return _by_workers(self.types[app].restart, workers)

    def eval(self, app: str, workers: int) -> float:
        return _by_workers(self.types[app].eval, workers)

    def verify(self, app: str) -> float:
        return self.types[app].verify

    def colocation(self, app: str, neighbours: Iterable[str]) -> float:
        """Step-time factor of ``app`` while other jobs share its node: the
        factor measured over every neighbour type pooled (``any``); without
        it, the mean of the per-neighbour factors. 1 alone."""
        table = self.types[app].colocation
        if not list(neighbours) or not table:
            return 1.0
        if "any" in table:
            return table["any"]
        return statistics.fmean(table.values())

    def scaled(self, factor: float | Mapping[str, float],
               colocation: bool = True) -> LiveCosts:
        """Every measured time x ``factor`` (one for all types, or per type): a
        machine running that much slower than when it was calibrated, as a live
        run's own steps showed. ``colocation=False`` drops the co-location
        factors of the types ``factor`` names (it includes them already)."""
        per = factor if isinstance(factor, Mapping) else dict.fromkeys(self.types, factor)
        types = {}
        for app, t in self.types.items():
            f = per.get(app, 1.0)
            types[app] = TypeCosts(
                {k: v * f for k, v in t.start.items()},
                {k: v * f for k, v in t.restart.items()},
                {k: v * f for k, v in t.eval.items()}, t.verify * f,
                t.colocation if colocation or app not in per else {},
                [StepPoint(p.workers, p.local_bsz, p.step * f, p.sync * f, p.samples)
                 for p in t.steps])
        return LiveCosts(types, {**self.meta, "speed_factor": per}, dict(per))

    def policy_restart_delay(self) -> float:
        """The restart delay a policy should assume: the median measured restart."""
        return statistics.median(v for t in self.types.values() for v in t.restart.values())

    def save(self, path: Path) -> None:
        doc = {"format": FORMAT, "version": VERSION, "meta": self.meta,
               "types": {k: v.to_json() for k, v in sorted(self.types.items())}}
        path.write_text(json.dumps(doc, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> LiveCosts:
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            raise CostError(f"{path}: not found; run 'coadapt calibrate' to measure it") from None
        except json.JSONDecodeError as exc:
            raise CostError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
        if doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise CostError(f"{path}: field 'format' is not {FORMAT} v{VERSION}")
        types = {}
        for app, t in doc.get("types", {}).items():
            try:
                types[app] = TypeCosts(
                    start={int(k): float(v) for k, v in t["start"].items()},
                    restart={int(k): float(v) for k, v in t["restart"].items()},
                    eval={int(k): float(v) for k, v in t["eval"].items()},
                    verify=float(t["verify"]),
                    colocation={str(k): float(v) for k, v in t.get("colocation", {}).items()},
                    steps=[StepPoint(int(p["workers"]), int(p["local_bsz"]), float(p["step"]),
                                     float(p["sync"]), int(p.get("samples", 0)))
                           for p in t.get("steps", [])])
            except (KeyError, TypeError, ValueError) as exc:
                raise CostError(f"{path}: types.{app}: bad or missing field ({exc})") from None
            if not (types[app].start and types[app].restart and types[app].eval):
                raise CostError(f"{path}: types.{app}: start, restart and eval need at least "
                                "one worker count")
        return cls(types, doc.get("meta", {}))


def refine_profiles(profiles: Mapping[str, AppProfile],
                    costs: LiveCosts) -> dict[str, AppProfile]:
    """Profiles whose single-node step table includes the calibration's steady
    steps (replacing a timing-grid cell at the same configuration): the
    simulator's truth where live jobs actually run; every step is scaled by
    ``costs.speed`` (the machine's speed). The profiles on disk are not
    touched."""
    out = dict(profiles)
    for app, prof in profiles.items():
        t = costs.types.get(app)
        f = costs.speed.get(app, 1.0)
        if f != 1.0:
            prof = dataclasses.replace(prof, placements=prof.placements.with_columns(
                pl.col("step_time") * f, pl.col("sync_time") * f), _cache={})
            out[app] = prof
        if t is None or not t.steps:
            continue
        rows = pl.DataFrame({"placement": [str(p.workers) for p in t.steps],
                             "local_bsz": [p.local_bsz for p in t.steps],
                             "step_time": [p.step for p in t.steps],
                             "sync_time": [p.sync for p in t.steps]})
        base = prof.placements.with_columns(pl.col("local_bsz").cast(pl.Int64))
        keep = base.join(rows.select("placement", "local_bsz"), on=["placement", "local_bsz"],
                         how="anti")
        merged = pl.concat([keep.select(rows.columns), rows.cast(keep.select(rows.columns).schema)],
                           how="vertical")
        out[app] = dataclasses.replace(prof, placements=merged, _cache={},
                                       source=f"{prof.source} + {costs.meta.get('source', '')}")
    return out


def resolve_costs(spec: str, profiles: str) -> LiveCosts | None:
    """The measured live costs to charge (``--live-costs``): ``none``; ``auto``,
    the profile folder's ``live-costs.json`` when it exists; or a path."""
    if spec == "none":
        return None
    if spec == "auto":
        path = Path(profiles.partition(":")[2] if ":" in profiles else profiles) / COSTS_FILE
        return LiveCosts.load(path) if path.exists() else None
    return LiveCosts.load(Path(spec))
