"""Which runs a sim-vs-live comparison reads, and whether they may be compared.

Both sides write ``DIR/<policy>/events.jsonl``; the header of each log says
what ran (mode, workload, cluster, the simulated side's ``run_kind``) and under
which settings. Two runs are compared only if they ran the same workload under
the same settings (:data:`COMPARED_FIELDS`); otherwise the error would measure
the difference in settings, not the simulator.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coadapt.eventlog import logs_below, read_events, run_header

log = logging.getLogger(__name__)

Event = dict[str, Any]

# Header fields (RunSettings.describe() and the workload) that must agree.
COMPARED_FIELDS = ("workload", "cluster", "network", "interval", "seed", "restart_delay",
                   "start_node", "tiresias_threshold", "p", "observation_noise")
# What the simulated side is; the key is its log header's run_kind.
KIND_TITLES = {
    "prediction": "prediction (simulated before the run, calibrated)",
    "sim-measured": "sim-measured (re-simulated at the run's measured speed)",
    "replay": "replay (the live decisions replayed in simulation)",
    "simulation": "simulation (plain)",
    "live": "live (another live run: run-to-run spread)",
}
DEFAULT_KIND = "simulation"  # logs written before run_kind existed


class CompareError(ValueError):
    """Input the comparison cannot use; the message names the offending path."""


@dataclass(frozen=True)
class RunInfo:
    """Where one policy's log came from and what its header says."""

    path: str
    mode: str | None
    workload: str | None
    cluster: str | None
    kind: str | None = None  # header run_kind (simulated logs)
    settings: dict[str, Any] = field(default_factory=dict)  # COMPARED_FIELDS it has


def run_info(path: str | Path, events: Sequence[Event]) -> RunInfo:
    """The header fields that decide whether two runs are comparable."""
    header = events[0] if events and events[0].get("kind") == "header" else {}
    cluster = header.get("cluster")
    return RunInfo(str(path), header.get("mode"), header.get("workload"),
                   None if cluster is None else str(cluster), header.get("run_kind"),
                   {k: header[k] for k in COMPARED_FIELDS if k in header})


def _same(a: Any, b: Any) -> bool:
    """Equal, numbers up to float noise (a value that went through JSON)."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def check_comparable(sim_runs: Mapping[str, RunInfo], live_runs: Mapping[str, RunInfo]) -> None:
    """Refuse runs whose workload or settings differ (:data:`COMPARED_FIELDS`):
    jobs of another workload share names by accident, and another interval,
    seed or restart delay makes the error a difference of settings. A field an
    older log lacks is warned about and not checked. The live side must be live."""
    for policy in sorted(set(sim_runs) & set(live_runs)):
        s, li = sim_runs[policy], live_runs[policy]
        if li.mode != "live":
            raise CompareError(f"{li.path}: header mode is {li.mode!r}, not 'live'; --live "
                               "takes the folder of a 'coadapt live' run")
        if s.workload != li.workload:
            raise CompareError(
                f"{s.path} (workload {s.workload!r}) and {li.path} (workload {li.workload!r}) "
                "ran different workloads; compare runs of the same workload")
        missing = []
        for key in COMPARED_FIELDS:
            if key not in s.settings or key not in li.settings:
                missing.append(key)
                continue
            a, b = s.settings[key], li.settings[key]
            if not _same(a, b):
                raise CompareError(
                    f"{policy}: {key} differs: {a!r} in {s.path}, {b!r} in {li.path}; the "
                    f"error would measure the different {key}, not the simulator: "
                    f"re-simulate with the live run's {key}")
        if missing:
            log.warning("%s: not checked (missing from %s or %s, older logs?): %s", policy,
                        s.path, li.path, ", ".join(missing))
        if s.mode not in ("simulate", "live"):
            log.warning("%s: header mode is %r, not 'simulate'", s.path, s.mode)


def comparison_kind(sim_runs: Mapping[str, RunInfo], policies: Sequence[str]) -> str:
    """What the simulated side is: its headers' run_kind ('live' for a live
    run); one kind per comparison, else :class:`CompareError`."""
    kinds: dict[str, list[str]] = {}
    for policy in policies:
        r = sim_runs[policy]
        kind = "live" if r.mode == "live" else r.kind
        if kind is None:
            log.warning("%s: header has no run_kind (an older log); taken as %r", r.path,
                        DEFAULT_KIND)
            kind = DEFAULT_KIND
        kinds.setdefault(kind, []).append(policy)
    if len(kinds) > 1:
        raise CompareError("the simulated runs are of different kinds ("
                           + "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(kinds.items()))
                           + "); compare one kind at a time")
    (kind,) = kinds
    if kind == "live":
        log.warning("comparing two live runs: the 'simulated' side is live")
    return kind


def load_results(root: str | Path) -> dict[str, list[Event]]:
    """``{policy: events}`` for every ``root/<policy>/events.jsonl``; any unreadable
    or header-less log raises :class:`CompareError` naming it (file:line for a bad line)."""
    root = Path(root)
    if not root.is_dir():
        raise CompareError(f"{root}: no such results folder")
    logs = logs_below(root)
    if not logs:
        raise CompareError(f"{root}: no <policy>/events.jsonl below it")
    out: dict[str, list[Event]] = {}
    for path in logs:
        try:
            events = list(read_events(path))
        except ValueError as exc:  # already names file:line
            raise CompareError(str(exc)) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise CompareError(f"{path}: cannot read ({exc})") from exc
        try:
            run_header(events, path)
        except ValueError as exc:
            raise CompareError(str(exc)) from exc
        out[path.parent.name] = events
    return out
