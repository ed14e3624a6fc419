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
import logging
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.util.atomic import atomic_write_text
from coadapt.world.calibration import (
    calibration_line,
    calibration_provenance,
    describe_calibration,
    machine_fingerprint,
    read_json_object,
    this_machines_calibration,
)
from coadapt.world.checks import count, mapping, number, parse_json, read_text, shown
from coadapt.world.names import CALIBRATIONS_DIR
from coadapt.world.profiles.profile import AppProfile

log = logging.getLogger(__name__)

COSTS_FILE = "live-costs.json"
FORMAT = "coadapt-live-costs"
VERSION = 2  # 2: machine fingerprint, per-type compute/sync factors; 1 still loads
REFERENCE = ("reference", "profiles")  # --calibration names of the profiles folder's file

__all__ = ["CALIBRATIONS_DIR", "COSTS_FILE", "REFERENCE", "CostError", "LiveCosts", "StepPoint",
           "TypeCosts", "calibration_line", "calibration_provenance", "describe_calibration",
           "machine_fingerprint", "previous_calibration", "refine_profiles", "resolve_costs",
           "this_machines_calibration"]


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
    (the profile's ``placements.csv`` unit) on one node. On disk the
    micro-batch keeps its event-log name ``local_bsz`` (old files stay readable)."""

    workers: int
    micro: int
    step: float
    sync: float
    samples: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"workers": self.workers, "local_bsz": self.micro, "step": self.step,
                "sync": self.sync, "samples": self.samples}


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
    compute_factor: float = 1.0  # calibrated compute / the profile's, at the same configs
    sync_factor: float = 1.0
    compute_spread: float | None = None  # relative half-width of compute_factor over configs

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("start", "restart", "eval"):
            d[k] = {str(w): v for w, v in d[k].items()}
        d["steps"] = [p.to_json() for p in self.steps]
        return d


LIVE_POLL_S = 0.25  # how often the live executor polls its groups (backends.live.backend)
CALIBRATION_POLL_S = 0.02  # how often the calibration polls (tools.measure.calibrate)


@dataclass(frozen=True)
class LiveCosts:
    types: dict[str, TypeCosts]
    meta: dict[str, Any] = field(default_factory=dict)
    speed: dict[str, float] = field(default_factory=dict)
    """Per type, profiled step times are scaled by this too (``scaled``)."""
    path: str | None = None  # the file it was loaded from (errors name it)
    choice: str | None = None  # the --calibration that chose it (reference, this, a path...)

    @property
    def poll_lag(self) -> float:
        """Seconds a live run loses per event it reacts to that the calibration
        did not: the executor sees a stop request, a free core or a finished
        job only on its next poll (half a poll on average), the calibration
        polled faster and its measured costs hold only its own half-poll."""
        live = float(self.meta.get("live_poll_s", LIVE_POLL_S))
        cal = float(self.meta.get("poll_s", CALIBRATION_POLL_S))
        return max(live - cal, 0.0) / 2

    def require(self, apps: Iterable[str]) -> None:
        """CostError unless every job type of ``apps`` is calibrated: a run
        would otherwise fail midway at the first start of the missing one."""
        missing = sorted(set(apps) - set(self.types))
        if missing:
            raise CostError(f"calibration {self.path or self.meta.get('source', '')}: no costs for "
                            f"{', '.join(missing)} (it has {', '.join(sorted(self.types))}); "
                            "calibrate them ('coadapt calibrate --quick', or --calibration "
                            "measure for a live run) or choose another calibration")

    def start(self, app: str, workers: int) -> float:
        return _by_workers(self.types[app].start, workers)

    def restart(self, app: str, workers: int) -> float:
        return _by_workers(self.types[app].restart, workers)

    def eval(self, app: str, workers: int) -> float:
        return _by_workers(self.types[app].eval, workers)

    def verify(self, app: str) -> float:
        return self.types[app].verify

    def launch(self, app: str, workers: int, restart: bool = False) -> float:
        """What a live (re)launch costs: the measured start or restart plus the
        poll lag (the launch, or the stop before it, waits for a poll)."""
        return (self.restart if restart else self.start)(app, workers) + self.poll_lag

    def finish(self, app: str) -> float:
        """What finishing costs after the final validation: the target seen on
        a poll, the fresh-process verification, its exit seen on another poll."""
        return self.verify(app) + 2 * self.poll_lag

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
                [StepPoint(p.workers, p.micro, p.step * f, p.sync * f, p.samples)
                 for p in t.steps], t.compute_factor * f, t.sync_factor * f, t.compute_spread)
        return LiveCosts(types, {**self.meta, "speed_factor": per}, dict(per), self.path,
                         self.choice)

    def machine(self) -> dict[str, Any]:
        return dict(self.meta.get("machine") or {})

    def is_this_machine(self) -> bool:
        """Same fingerprint as this machine (a v1 file has none: another machine)."""
        return self.machine().get("id") == machine_fingerprint()["id"]

    def is_reference(self) -> bool:
        """The shipped calibration of the named reference machine (its
        ``meta.machine.reference``), which results default to."""
        return self.machine().get("reference") is True

    def policy_restart_delay(self) -> float:
        """The restart delay a policy should assume: the median measured restart."""
        return statistics.median(v for t in self.types.values() for v in t.restart.values())

    def save(self, path: Path) -> None:
        doc = {"format": FORMAT, "version": VERSION, "meta": self.meta,
               "types": {k: v.to_json() for k, v in sorted(self.types.items())}}
        atomic_write_text(path, json.dumps(doc, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> LiveCosts:
        """Read and check a costs file: any content either loads or raises
        CostError naming the file (and line, or field)."""
        text = read_text(path, CostError, "a live-costs JSON file (e.g. profiles/live-costs.json)",
                         "not found; run 'coadapt calibrate' to measure it")
        doc = parse_json(path, text, CostError)
        if not isinstance(doc, dict):
            raise CostError(f"{path}: expected a JSON object, got {type(doc).__name__}")
        if doc.get("format") != FORMAT or doc.get("version") not in (1, VERSION) \
                or isinstance(doc.get("version"), bool):
            raise CostError(f"{path}: field 'format' is not {FORMAT} v1 or v{VERSION}")
        meta = _meta(path, doc.get("meta", {}))
        if "types" not in doc:
            raise CostError(f"{path}: field 'types': missing")
        raw = mapping(doc["types"], f"{path}: field 'types'", CostError, empty=False)
        types = {str(app): _type_costs(path, app, t) for app, t in raw.items()}
        return cls(types, meta, path=str(path))


_WORKERS = re.compile(r"[1-9][0-9]{0,8}")


def _meta(path: Path, meta: Any) -> dict[str, Any]:
    """The ``meta`` object, its fields that are read checked."""
    meta = mapping(meta, f"{path}: field 'meta'", CostError)
    for key in ("live_poll_s", "poll_s"):
        if key in meta:
            number(meta[key], f"{path}: field 'meta.{key}'", CostError)
    if meta.get("machine") is not None:
        mapping(meta["machine"], f"{path}: field 'meta.machine'", CostError)
    return meta


def _by_workers_table(path: Path, at: str, t: dict[str, Any], key: str) -> dict[int, float]:
    where = f"{at}.{key}"
    if key not in t:
        raise CostError(f"{path}: field '{where}': missing")
    table = mapping(t[key], f"{path}: field '{where}'", CostError, empty=False)
    out = {}
    for k, v in table.items():
        if not _WORKERS.fullmatch(str(k)):
            raise CostError(f"{path}: field '{where}': key {shown(k)} is not a worker count")
        out[int(k)] = number(v, f"{path}: field '{where}.{k}'", CostError)
    return out


def _type_costs(path: Path, app: str, t: Any) -> TypeCosts:
    """One job type's entry of ``types``, every value checked."""
    at = f"types.{app}"
    t = mapping(t, f"{path}: field '{at}'", CostError)

    def num(key: str, default: float | None = None, **how: Any) -> float:
        if key not in t and default is not None:
            return default
        if key not in t:
            raise CostError(f"{path}: field '{at}.{key}': missing")
        return number(t[key], f"{path}: field '{at}.{key}'", CostError, **how)

    colocation = mapping(t.get("colocation", {}), f"{path}: field '{at}.colocation'", CostError)
    steps = t.get("steps", [])
    if not isinstance(steps, list):
        raise CostError(f"{path}: field '{at}.steps': expected a list, got {shown(steps)}")
    points = []
    for i, p in enumerate(steps):
        w = f"{path}: field '{at}.steps[{i}]"
        p = mapping(p, w + "'", CostError)
        for key in ("workers", "local_bsz", "step", "sync"):
            if key not in p:
                raise CostError(f"{w}.{key}': missing")
        points.append(StepPoint(
            count(p["workers"], w + ".workers'", CostError),
            count(p["local_bsz"], w + ".local_bsz'", CostError),
            number(p["step"], w + ".step'", CostError, positive=True),
            number(p["sync"], w + ".sync'", CostError),
            count(p.get("samples", 0), w + ".samples'", CostError, minimum=0)))
    spread = t.get("compute_spread")
    return TypeCosts(
        start=_by_workers_table(path, at, t, "start"),
        restart=_by_workers_table(path, at, t, "restart"),
        eval=_by_workers_table(path, at, t, "eval"),
        verify=num("verify"),
        colocation={str(k): number(v, f"{path}: field '{at}.colocation.{k}'", CostError,
                                   positive=True) for k, v in colocation.items()},
        steps=points,
        compute_factor=num("compute_factor", 1.0, positive=True),
        sync_factor=num("sync_factor", 1.0, positive=True),
        compute_spread=None if spread is None else num("compute_spread"))


def refine_profiles(profiles: Mapping[str, AppProfile],
                    costs: LiveCosts) -> dict[str, AppProfile]:
    """Profiles as this machine runs them: every step of the timing grid with
    its compute part x the type's ``compute_factor`` and its sync part x
    ``sync_factor`` (the calibration against the profile, times any measured
    speed ``scaled`` folded in), then the calibration's own steady steps in
    place of the grid cells at the same configurations (where live jobs run
    most). The profiles on disk are not touched."""
    out = dict(profiles)
    for app, prof in profiles.items():
        t = costs.types.get(app)
        cf = t.compute_factor if t is not None else costs.speed.get(app, 1.0)
        sf = t.sync_factor if t is not None else costs.speed.get(app, 1.0)
        if cf != 1.0 or sf != 1.0:
            sync = pl.col("sync_time")
            prof = dataclasses.replace(prof, placements=prof.placements.with_columns(
                (sync * sf + (pl.col("step_time") - sync) * cf).alias("step_time"),
                sync * sf), _cache={})
            out[app] = prof
        if t is None or not t.steps:
            continue
        rows = pl.DataFrame({"placement": [str(p.workers) for p in t.steps],
                             "local_bsz": [p.micro for p in t.steps],
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


def previous_calibration(profiles: str, root: Path = CALIBRATIONS_DIR
                         ) -> tuple[str, dict[str, Any]] | None:
    """What a new calibration of this machine replaces, as (label, JSON
    document): this machine's newest in ``root``, else the profile folder's
    reference; None if neither can be read."""
    mine = this_machines_calibration(root)
    folder = Path(profiles.partition(":")[2] if ":" in profiles else profiles)
    path = mine if mine is not None else folder / COSTS_FILE
    try:
        LiveCosts.load(path)  # a document calibration_changes can read
    except CostError:
        return None
    doc = read_json_object(path)
    date = str(doc.get("meta", {}).get("date") or "undated").replace("T", " ")[:16]
    what = "this machine's previous calibration" if mine is not None else "the reference calibration"
    return f"{what} ({path}, {date})", doc


def resolve_costs(spec: str, profiles: str, root: Path = CALIBRATIONS_DIR) -> LiveCosts | None:
    """The machine calibration to charge (``--calibration``): ``reference``
    (alias ``profiles``): the profile folder's ``live-costs.json``, measured on
    the named reference machine (None if the folder has none); ``this``: this
    machine's newest in ``root`` (CostError if none); ``auto``: this machine's
    if any, else the reference; ``none``; or a path. The result remembers
    ``spec``. Another machine's file (not the reference) is logged at INFO."""
    folder = Path(profiles.partition(":")[2] if ":" in profiles else profiles)
    if spec == "none":
        return None
    if spec in ("this", "auto"):
        mine = this_machines_calibration(root)
        if mine is not None:
            return dataclasses.replace(LiveCosts.load(mine), choice=spec)
        if spec == "this":
            raise CostError(f"--calibration this: no calibration of this machine "
                            f"({machine_fingerprint()['cpu_model']}) in {root}/; run "
                            "'coadapt calibrate --quick' first (about 3 minutes), or use "
                            "--calibration reference")
    if spec in (*REFERENCE, "auto"):
        path = folder / COSTS_FILE
        if not path.exists():
            log.info("%s: no %s: no machine calibration (a fixed restart delay)", folder,
                     COSTS_FILE)
            return None
    else:
        path = Path(spec)
    costs = dataclasses.replace(LiveCosts.load(path), choice=spec)
    if not costs.is_this_machine() and not costs.is_reference():
        log.info("calibration %s", describe_calibration(costs))
    return costs
