"""Which machine a calibration (``live-costs.json``) describes, and saying so.

Results charge a machine calibration, and the same command gives different
numbers under another one, so every table, log header and report names the
calibration it used: the shipped one of the named reference machine, this
machine's own (``coadapt calibrate``), another file, or none. ``coadapt
calibrate`` also shows what a new calibration changed against the previous.

Kept apart from :mod:`coadapt.world.costs` (which re-exports the public
names) so that the costs stay about what a job pays.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from coadapt.world.names import CALIBRATIONS_DIR


class Calibrated(Protocol):
    """What is read here of a :class:`coadapt.world.costs.LiveCosts` (a
    protocol: the costs module imports this one)."""

    @property
    def meta(self) -> dict[str, Any]: ...

    @property
    def path(self) -> str | None: ...

    @property
    def choice(self) -> str | None: ...

    def machine(self) -> dict[str, Any]: ...

    def is_this_machine(self) -> bool: ...

    def is_reference(self) -> bool: ...

CALIBRATE_HINT = "run `coadapt calibrate --quick` for predictions of live runs here"


def machine_fingerprint() -> dict[str, Any]:
    """What makes step times comparable between two machines, read without
    running anything: CPU model and flags, usable cores, kernel, torch."""
    model, flags = "unknown", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = value.strip()
    except OSError:
        pass
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = None
    fp = {"cpu_model": model, "flags": hashlib.sha1(flags.encode()).hexdigest()[:12],
          "cores": len(os.sched_getaffinity(0)), "kernel": platform.release(), "torch": torch}
    fp["id"] = hashlib.sha1(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:12]
    return fp


def _file(costs: Calibrated) -> str:
    """The file the costs were read from (or, built in memory, written to)."""
    return str(costs.path or costs.meta.get("source") or "?")


def _when(costs: Calibrated, minutes: bool) -> str:
    """The calibration's date, ``2026-12-05`` or ``2026-12-05 18:30``."""
    date = str(costs.meta.get("date") or "undated")
    day, _, time = date.partition("T")
    return f"{day} {time[:5]}" if minutes and time else day


def _details(costs: Calibrated) -> str:
    """The CPU (or host) and cores a calibration's machine had."""
    m = costs.machine()
    cores = m.get("cores") or costs.meta.get("cores") or "?"
    if isinstance(cores, list | tuple | dict):  # meta's: the cores it ran on
        cores = len(cores)
    if m.get("cpu_model"):
        return f"{m['cpu_model']}, {cores} cores"
    return f"host {m.get('host') or costs.meta.get('host', '?')}, {cores} cores"


def machine_name(costs: Calibrated) -> str:
    """The machine a calibration was measured on, in words: ``reference
    machine (host vm, 2 cores)``, or its CPU and cores."""
    m = costs.machine()
    if m.get("name"):
        return f"{m['name']} ({_details(costs)})"
    return _details(costs) + ("" if m else ", no fingerprint")


def calibration_provenance(costs: Calibrated | None) -> dict[str, Any] | None:
    """What a run's log header records about its calibration (None: none):
    the file, the machine, its date, whether it is the shipped reference or
    this machine's, and the ``--calibration`` choice that picked it."""
    if costs is None:
        return None
    return {"file": _file(costs), "machine": machine_name(costs),
            "date": costs.meta.get("date"), "reference": costs.is_reference(),
            "this_machine": costs.is_this_machine(), "choice": costs.choice}


def calibration_line(costs: Calibrated | None) -> str:
    """One line for a table header: which calibration the numbers charged."""
    if costs is None:
        return "calibration: none (a fixed restart delay)"
    if costs.is_this_machine():
        return f"calibration: this machine ({_file(costs)}, {_when(costs, True)})"
    if costs.is_reference():
        name = costs.machine().get("name") or "reference machine"
        return (f"calibration: {name} ({_details(costs)}; {_file(costs)}, {_when(costs, False)}), "
                f"not this one; {CALIBRATE_HINT}")
    return (f"calibration: another machine ({machine_name(costs)}; {_file(costs)}, "
            f"{_when(costs, True)}), not this one; {CALIBRATE_HINT}")


def describe_calibration(costs: Calibrated) -> str:
    """Which machine a calibration describes, and whether it is this one
    (a live run's log header keeps it as ``about``)."""
    what = f"{costs.meta.get('source', '?')} ({_when(costs, True)}, {machine_name(costs)})"
    if costs.is_this_machine():
        return f"{what}: this machine"
    ref = " (the shipped reference)" if costs.is_reference() else ""
    return (f"{what}: ANOTHER machine's{ref} (this one: {machine_fingerprint()['cpu_model']}); "
            "predictions may be off: run 'coadapt calibrate --quick'")


def this_machines_calibration(root: Path = CALIBRATIONS_DIR) -> Path | None:
    """The newest calibration in ``root`` whose fingerprint is this machine's."""
    me = machine_fingerprint()["id"]
    found = []
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        meta = read_json_object(path).get("meta")
        machine = meta.get("machine") if isinstance(meta, dict) else None
        if isinstance(machine, dict) and machine.get("id") == me:
            found.append((str(meta.get("date") or ""), path))
    return max(found)[1] if found else None


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, or {} if it cannot be read as one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


# ------------------------------------------------------------------ what changed
@dataclass(frozen=True)
class Change:
    """One calibrated quantity of one job type, before and after (None: not
    measured there)."""

    app: str
    quantity: str
    old: float | None
    new: float | None
    unit: str = "s"

    @property
    def ratio(self) -> float | None:
        if self.old is None or self.new is None or self.old == 0:
            return None
        return self.new / self.old


# quantity in the table, key in the JSON, unit; by-worker tables are shown per worker count
_BY_WORKERS = (("start", "start"), ("restart", "restart"), ("validation", "eval"))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _colocation(t: Mapping[str, Any]) -> float | None:
    """The co-location factor the simulator charges: ``any``, else the mean."""
    table = t.get("colocation") or {}
    if not table:
        return None
    return float(table["any"]) if "any" in table else statistics.fmean(map(float, table.values()))


def _quantities(t: Mapping[str, Any]) -> dict[tuple[str, str], float | None]:
    """(quantity, unit) -> value of one type's JSON entry (none if absent)."""
    if not t:
        return {}
    out: dict[tuple[str, str], float | None] = {}
    for name, key in _BY_WORKERS:
        for k, v in sorted((t.get(key) or {}).items(), key=lambda kv: int(kv[0])):
            out[(f"{name} K{k}", "s")] = _num(v)
    out[("verification", "s")] = _num(t.get("verify"))
    out[("co-location", "x")] = _colocation(t)
    out[("compute factor", "x")] = _num(t.get("compute_factor", 1.0))
    out[("sync factor", "x")] = _num(t.get("sync_factor", 1.0))
    return out


def calibration_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Per job type of either document (``live-costs.json`` as loaded by
    ``json``) and per quantity, the old and the new value."""
    changes = []
    old_types, new_types = old.get("types") or {}, new.get("types") or {}
    for app in sorted(set(old_types) | set(new_types)):
        before = _quantities(old_types.get(app) or {})
        after = _quantities(new_types.get(app) or {})
        for q, unit in dict.fromkeys([*after, *before]):
            if before.get((q, unit)) is None and after.get((q, unit)) is None:
                continue
            changes.append(Change(app, q, before.get((q, unit)), after.get((q, unit)), unit))
    return changes


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} s" if unit == "s" else f"x{value:.3f}"


def format_changes(changes: list[Change], against: str) -> str:
    """The short table ``coadapt calibrate`` prints: old -> new and the ratio
    per type and quantity, against ``against`` (which calibration was before)."""
    lines = [f"changes against {against}:",
             f"  {'job type':18s} {'quantity':16s} {'old':>9s}    {'new':>9s} {'new/old':>8s}"]
    unmeasured = {c.app for c in changes} - {c.app for c in changes if c.new is not None}
    for c in changes:
        if c.app in unmeasured:
            continue
        ratio = "" if c.ratio is None else f"{c.ratio:.2f}"
        note = "  (new)" if c.old is None else "  (not measured now)" if c.new is None else ""
        lines.append(f"  {c.app:18s} {c.quantity:16s} {_cell(c.old, c.unit):>9s} -> "
                     f"{_cell(c.new, c.unit):>9s} {ratio:>8s}{note}")
    lines += [f"  {app:18s} not measured now (kept in the previous)" for app in sorted(unmeasured)]
    if not changes:
        lines.append("  (no quantity in either calibration)")
    return "\n".join(lines)
