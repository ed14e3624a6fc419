"""Kinds of node: what a kind is, how a CPU worker emulates it, how fast it runs.

A kind names a class of node whose speed depends on the job, as GPU
generations do. For the GPU profiles (``sia:DIR``) a kind is a GPU type with
its own measured tables. On CPUs a kind is a *recipe* applied to real worker
processes: instruction-set limits set in the worker's environment before torch
loads (oneDNN's ``ONEDNN_MAX_CPU_ISA``, ATen's ``ATEN_CPU_CAPABILITY``) and a CPU
quota per slot through a cgroup the live run creates and removes. The recipes
ship in ``kinds.toml`` beside this module; users add their own with
``--kinds FILE`` (same format).

How fast a job type runs on a CPU kind is measured, never declared:
``coadapt calibrate --quick`` times each job type on workers emulating each
kind and writes :class:`KindSpeeds` (compute and all-reduce factors against
the shipped profiles, with their spread).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from coadapt.util.atomic import atomic_write_text
from coadapt.world.cluster import DEFAULT_KIND
from coadapt.world.names import KIND_SPEEDS_FILE  # noqa: F401 (re-exported)

KINDS_FORMAT = "coadapt-kind-speeds"
_FIELDS = {"description": str, "isa": str, "aten": str, "cpu_quota": float, "gpu": str}


class KindError(ValueError):
    """A kinds file or a kind-speeds file is malformed; the message names file and field."""


@dataclass(frozen=True)
class NodeKind:
    """One kind of node and how a CPU worker emulates it.

    ``isa`` / ``aten``: the instruction-set ceilings given to oneDNN and ATen
    (None: the machine's best). ``cpu_quota``: CPU time per slot in cores
    (0.5: a slot's worker gets half a core), enforced by a cgroup; None: a
    whole core. ``gpu``: the GPU type a kind stands for in GPU profiles."""

    name: str
    description: str = ""
    isa: str | None = None
    aten: str | None = None
    cpu_quota: float | None = None
    gpu: str | None = None

    def __post_init__(self) -> None:
        if self.cpu_quota is not None and not 0.01 <= self.cpu_quota <= 1.0:
            raise KindError(f"kind {self.name!r}: cpu_quota {self.cpu_quota} must be in "
                            "[0.01, 1] cores per slot")

    def env(self) -> dict[str, str]:
        """Environment a worker of this kind starts with (before torch loads)."""
        out = {}
        if self.isa:
            out["ONEDNN_MAX_CPU_ISA"] = self.isa
        if self.aten:
            out["ATEN_CPU_CAPABILITY"] = self.aten
        return out

    @property
    def emulated(self) -> bool:
        """Whether a CPU worker of this kind differs from a plain one."""
        return bool(self.env()) or self.cpu_quota is not None


def _parse_kinds(text: str, where: str) -> dict[str, NodeKind]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise KindError(f"{where}: {err}") from None
    kinds = {}
    for name, table in data.get("kind", {}).items():
        if not isinstance(table, dict):
            raise KindError(f"{where}: [kind.{name}] must be a table")
        unknown = sorted(set(table) - set(_FIELDS))
        if unknown:
            raise KindError(f"{where}: [kind.{name}] unknown field(s) {', '.join(unknown)} "
                            f"(known: {', '.join(_FIELDS)})")
        for key, typ in _FIELDS.items():
            if key in table and not isinstance(table[key], typ | int if typ is float else typ):
                raise KindError(f"{where}: [kind.{name}] field '{key}' must be a "
                                f"{typ.__name__}, got {table[key]!r}")
        try:
            kinds[name] = NodeKind(name, **table)
        except KindError as err:
            raise KindError(f"{where}: {err}") from None
    if not kinds:
        raise KindError(f"{where}: no [kind.NAME] tables")
    return kinds


def load_kinds(extra: str | Path | None = None) -> dict[str, NodeKind]:
    """The shipped kinds, plus (and overridden by) those in ``extra``."""
    shipped = resources.files("coadapt.world").joinpath("kinds.toml").read_text()
    kinds = _parse_kinds(shipped, "coadapt/world/kinds.toml")
    if extra is not None:
        path = Path(extra)
        if not path.is_file():
            raise KindError(f"{path}: kinds file not found (--kinds expects a TOML file "
                            "of [kind.NAME] tables; see coadapt/world/kinds.toml)")
        kinds |= _parse_kinds(path.read_text(), str(path))
    return kinds


@dataclass(frozen=True)
class KindFactor:
    """A job type's step on one kind against the shipped profile: compute and
    all-reduce multiply, each with its measured spread (coefficient of variation)."""

    compute: float
    sync: float
    compute_cv: float = 0.0
    sync_cv: float = 0.0
    samples: int = 0


@dataclass(frozen=True)
class KindSpeeds:
    """Measured factors per (job type, kind), from ``coadapt calibrate --quick``.

    ``reference`` is the kind the machine calibration (``live-costs.json``)
    measured, i.e. plain workers; a kind's truth is the followed profile scaled
    by its factor over the reference's, so the two calibrations compose."""

    factors: Mapping[str, Mapping[str, KindFactor]]  # app -> kind -> factor
    reference: str = "native"
    source: str = ""
    machine: Mapping[str, Any] = field(default_factory=dict)

    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k for per in self.factors.values() for k in per))

    def relative(self, app: str, kind: str) -> tuple[float, float]:
        """(compute, sync) multipliers of ``kind`` over the reference kind."""
        per = self.factors[app]
        ref = per.get(self.reference, KindFactor(1.0, 1.0))
        f = per[kind]
        return f.compute / ref.compute, (f.sync / ref.sync if ref.sync > 0 else 1.0)

    def covers(self, apps: Iterable[str], kind: str) -> list[str]:
        """The job types in ``apps`` without a factor for ``kind``."""
        return [a for a in apps if kind not in self.factors.get(a, {})]

    def to_json(self) -> dict[str, Any]:
        return {"format": KINDS_FORMAT, "version": 1, "reference": self.reference,
                "source": self.source, "machine": dict(self.machine),
                "factors": {a: {k: asdict(f) for k, f in per.items()}
                            for a, per in self.factors.items()}}

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        atomic_write_text(path, json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")
        return path


def load_kind_speeds(path: str | Path) -> KindSpeeds:
    """Read a kind-speeds file; errors name the file and the field."""
    path = Path(path)
    if not path.is_file():
        raise KindError(f"{path}: kind speeds not found; measure them with "
                        "'coadapt calibrate --quick --cluster 1x1:native,1x1:legacy'")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise KindError(f"{path}:{err.lineno}: not JSON ({err.msg})") from None
    if not isinstance(data, dict) or data.get("format") != KINDS_FORMAT:
        raise KindError(f"{path}: field 'format' must be {KINDS_FORMAT!r}")
    factors: dict[str, dict[str, KindFactor]] = {}
    for app, per in (data.get("factors") or {}).items():
        for kind, f in per.items():
            try:
                kf = KindFactor(**f)
            except TypeError as err:
                raise KindError(f"{path}: factors.{app}.{kind}: {err}") from None
            if not (kf.compute > 0 and kf.sync >= 0):
                raise KindError(f"{path}: factors.{app}.{kind}: compute must be > 0 and "
                                f"sync >= 0 (got {kf.compute}, {kf.sync})")
            factors.setdefault(app, {})[kind] = kf
    if not factors:
        raise KindError(f"{path}: field 'factors' is empty")
    return KindSpeeds(factors, str(data.get("reference", "native")), str(path),
                      data.get("machine") or {})


def is_plain(kind: str) -> bool:
    """The default kind: today's nodes, run as they are."""
    return kind == DEFAULT_KIND
