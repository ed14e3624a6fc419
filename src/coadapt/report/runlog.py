"""A run folder's event logs, read once, and what their headers say.

``OUT/<policy>/events.jsonl`` per policy (as ``simulate`` and ``live`` write
them); in a live folder also ``OUT/prediction/<policy>/events.jsonl``, the
simulation written before the run. Everything a report shows is computed
from these logs alone (``metrics``), so a report can be rebuilt at any time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.eventlog import logs_below, read_events
from coadapt.metrics import Tally, job_table, summarize, tally_log, timeline
from coadapt.metrics.breakdown import Breakdown
from coadapt.report.order import ordered_policies
from coadapt.util.outdir import PARTIAL, unfinished

Event = dict[str, Any]
LIVE_FILE = "live.json"  # a live run's record (runs.live.workflow.RUN_FILE)
PREDICTION_DIR = "prediction"  # its prediction (runs.live.predict.PREDICTION_DIR)


class ReportError(ValueError):
    """A folder a report cannot be made of (the CLI exits 2 with this message)."""


@dataclass
class RunLog:
    """One policy's log: its tally (one streamed pass), header, summary and
    per-job table. The events themselves are read again, streamed
    (``stream``), by what needs more than the tally: a log of the whole Philly
    trace held as dicts took gigabytes per policy."""

    policy: str
    path: Path
    tally: Tally
    split: Breakdown
    """The breakdown, gathered in the same pass as the tally."""

    def stream(self) -> Iterator[Event]:
        """The log's events, read as they are needed."""
        return read_events(self.path)

    @cached_property
    def events(self) -> list[Event]:
        """Every event, in memory: for the small logs of a live run and its prediction."""
        return list(self.stream())

    @cached_property
    def breakdown(self) -> dict[str, float | None]:
        """Wait, run and delay means and the modeled share (``metrics.breakdown``)."""
        return self.split.result()

    @property
    def header(self) -> dict[str, Any]:
        return self.tally.header or {}

    @cached_property
    def summary(self) -> dict[str, Any]:
        s = summarize(self.tally)
        s["policy"] = s.get("policy") or self.policy
        return s

    @cached_property
    def jobs(self) -> pl.DataFrame:
        return job_table(self.tally)

    @cached_property
    def timeline(self) -> pl.DataFrame:
        return timeline(self.tally)

    @property
    def simulated(self) -> bool:
        return self.header.get("mode") == "simulate"

    @cached_property
    def state(self) -> str:
        """'complete'; 'interrupted' (a live run stopped by a signal, which
        --resume continues); or 'unfinished' (no end: killed, or still running)."""
        ends = self.tally.ends
        if not ends:
            return "unfinished"
        return "interrupted" if ends[-1].get("interrupted") else "complete"


def read_runs(root: Path, baseline: str | None = None) -> list[RunLog]:
    """The logs of ``root/<policy>/events.jsonl`` in table order (``baseline``
    first); ReportError when one is unreadable (naming the file and line) or
    lacks its header, or when they record different workloads."""
    paths = {p.parent.name: p for p in logs_below(root)}
    runs = []
    for name in ordered_policies(paths, baseline):
        split = Breakdown()  # gathered in the tally's pass: one read of each log
        try:
            tally = tally_log(paths[name], also=split.add)
        except (OSError, ValueError) as exc:
            raise ReportError(str(exc)) from exc
        runs.append(RunLog(name, paths[name], tally, split))
    workloads = {r.policy: r.header.get("workload") for r in runs}
    if len(set(workloads.values())) > 1:
        raise ReportError(f"{root}: its logs record different workloads ("
                          + ", ".join(f"{p}: {w}" for p, w in workloads.items())
                          + "); one report is of one run: remove the strays or report each "
                          "run from its own folder")
    return runs


def require_runs(out: Path, baseline: str | None = None) -> list[RunLog]:
    """``read_runs`` that refuses a folder without logs, saying what to run."""
    if not out.is_dir():
        raise ReportError(f"{out}: not a folder")
    runs = read_runs(out, baseline)
    if not runs:
        left = unfinished(out)
        why = (f" (unfinished: {', '.join(left)} in {out / PARTIAL}; finish them with --resume)"
               if left else "")
        raise ReportError(f"{out}: no <policy>/events.jsonl below it{why}; run 'coadapt simulate "
                          "--out DIR' (or 'coadapt live --out DIR') first")
    return runs


def unfinished_runs(out: Path, runs: list[RunLog]) -> list[str]:
    """What a report must say is missing or partial: policies a killed run left
    in OUT/.partial (not shown), and logs that did not reach their end."""
    left = [f"{n} (in {PARTIAL}/, not shown)" for n in unfinished(out)
            if n not in {r.policy for r in runs}]
    return left + [f"{r.policy} ({r.state})" for r in runs if r.state != "complete"]


def predictions(out: Path, baseline: str | None = None) -> list[RunLog]:
    """A live folder's prediction logs (empty for a simulated folder)."""
    root = out / PREDICTION_DIR
    return read_runs(root, baseline) if root.is_dir() else []


def is_live(out: Path, runs: list[RunLog]) -> bool:
    return (out / LIVE_FILE).exists() or any(r.header.get("mode") == "live" for r in runs)


# ------------------------------------------------------------------ headers
@dataclass(frozen=True)
class Calibration:
    """The machine calibration a run charged, as its log header records it."""

    line: str  # one line: file, machine, date, whose
    source: str = ""  # the file
    present: bool = True
    reference: bool = False  # the shipped reference machine's
    other: bool = False  # not this machine's (the reference, or another)


def _machine(m: Any) -> str | None:
    if isinstance(m, Mapping):
        bits = [str(m[k]) for k in ("name", "cpu_model", "host") if m.get(k)]
        if m.get("cores"):
            bits.append(f"{m['cores']} cores")
        return ", ".join(bits) or None
    return str(m) if m else None


def calibration_of(header: Mapping[str, Any]) -> Calibration:
    """From the header's ``calibration`` dict ({file, machine, date,
    reference, this_machine}, or a live run's {file, about}) or, in older
    logs, its ``live_costs`` source; ``present=False`` when the run charged none."""
    cal = header.get("calibration")
    if isinstance(cal, Mapping) and cal:
        src = str(cal.get("file") or cal.get("source") or "?")
        if "reference" not in cal and cal.get("about"):  # the live workflow's description
            about = str(cal["about"])
            return Calibration(f"{src}: {about}", src, reference="shipped reference" in about,
                               other="ANOTHER machine" in about)
        ref = bool(cal.get("reference"))
        other = ref or cal.get("this_machine") is False
        whose = ("the shipped reference machine's" if ref else
                 "another machine's" if other else
                 "this machine's" if cal.get("this_machine") else "")
        bits = [b for b in (_machine(cal.get("machine")), cal.get("date")) if b]
        line = src + (f" ({'; '.join(map(str, bits))})" if bits else "") + \
            (f": {whose}" if whose else "")
        return Calibration(line, src, reference=ref, other=other)
    src = header.get("live_costs")
    if src:
        shipped = Path(str(src)).parent.name == "profiles"
        return Calibration(f"{src} (machine and date not recorded in this log)", str(src),
                           reference=shipped, other=shipped)
    return Calibration("none: jobs paid one fixed restart delay, no measured start, "
                       "validation or verification costs", present=False)


@dataclass(frozen=True)
class Settings:
    """The settings of a run folder, from its logs' headers (one line each)."""

    items: list[tuple[str, str]] = field(default_factory=list)
    seed: int | None = None
    calibration: Calibration = field(default_factory=lambda: calibration_of({}))


def settings_of(runs: list[RunLog]) -> Settings:
    """What the first log's header says, with the policies of all; a field
    that differs between logs lists each value."""
    h = runs[0].header if runs else {}

    def val(key: str) -> str:
        vals = list(dict.fromkeys(json.dumps(r.header.get(key), default=str) for r in runs))
        shown = [json.loads(v) for v in vals]
        return " / ".join("none" if v is None else str(v) for v in shown)

    workload = val("workload")
    if h.get("workload_path"):
        workload += f" ({h['workload_path']})"
    jobs = runs[0].summary.get("jobs") if runs else None
    count = f", {jobs} job{'' if jobs == 1 else 's'}" if jobs is not None else ""
    items = [("workload", workload + count),
             ("cluster", f"{val('cluster')} ({val('total_slots')} slots), network "
                         f"{val('network')}"),
             ("round interval", f"{val('interval')} s"),
             ("policies", ", ".join(r.policy for r in runs)),
             ("seed", val("seed")),
             ("preset", val("preset")),
             ("efficiency truth", val("efficiency_truth")),
             ("restart delay", f"{float(h.get('restart_delay') or 0):.1f} s (when no "
                               "calibration gives one)")]
    if h.get("run_kind"):
        items.append(("run kind", val("run_kind")))
    if h.get("replay_of"):
        items.append(("replaying", val("replay_of")))
    profiles = h.get("profiles")
    if isinstance(profiles, Mapping):
        items += [(f"profile {k}", str(v)) for k, v in sorted(profiles.items())]
    cal = calibration_of(h)
    items.append(("calibration", cal.line))
    seed = h.get("seed")
    return Settings(items, int(seed) if isinstance(seed, int | float) else None, cal)
