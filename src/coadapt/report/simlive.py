"""Simulated against live: how well the simulator predicts real job completion times.

A simulated run and a live run write the same layout (``DIR/<policy>/events.jsonl``)
and the same event kinds, so the comparison is a join of two sets of logs on
(policy, job). Everything except :func:`load_results` works on event lists
and frames, so it is tested without touching the disk. The parts: reading the
logs and checking the two sides may be compared (:mod:`.simlive_runs`), the
per-job join and the ranking (:mod:`.simlive_jobs`), the whole comparison
(here; every name above is importable from here) and the files, the figure
and the printed table (:mod:`coadapt.report.simlive_view`).

Two runs are compared only if they ran the same workload under the same
settings (:data:`COMPARED_FIELDS` of each log header); otherwise the error
would measure the difference in settings, not the simulator. The simulated
side's ``run_kind`` header field names what it is (:data:`KIND_TITLES`), and
every output carries that name.

Errors are relative to live: ``(sim - live) / live``. Means, medians and makespans
are taken over the *matched* jobs (finished on both sides), so both sides describe
the same set of jobs; jobs missing or unfinished on either side are listed, never
dropped without a word.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from coadapt.eventlog import log_in
from coadapt.report.simlive_jobs import (
    JOB_SCHEMA,
    PolicyComparison,
    Ranking,
    compare_policy,
    rank_policies,
    unmatched_names,
)
from coadapt.report.simlive_runs import (
    COMPARED_FIELDS,
    DEFAULT_KIND,
    KIND_TITLES,
    CompareError,
    Event,
    RunInfo,
    check_comparable,
    comparison_kind,
    load_results,
    run_info,
)

log = logging.getLogger(__name__)

__all__ = ["BAND", "COMPARED_FIELDS", "DEFAULT_KIND", "JOB_SCHEMA", "KIND_TITLES", "LIVE_LABEL",
           "SIM_LABEL", "CompareError", "Comparison", "Event", "PolicyComparison", "Ranking",
           "RunInfo", "check_comparable", "compare_dirs", "compare_policy", "compare_runs",
           "comparison_kind", "load_results", "rank_policies", "run_info", "unmatched_names"]

SIM_LABEL = "simulated"
LIVE_LABEL = "live"
BAND = 0.10  # the +-10% band drawn around y = x


@dataclass
class Comparison:
    """The whole result: per-policy numbers, the per-job join and the ranking."""

    sim_dir: str
    live_dir: str
    policies: list[PolicyComparison]
    jobs: pl.DataFrame
    ranking: Ranking
    sim_runs: dict[str, RunInfo] = field(default_factory=dict)
    live_runs: dict[str, RunInfo] = field(default_factory=dict)
    only_sim: list[str] = field(default_factory=list)
    only_live: list[str] = field(default_factory=list)
    kind: str = DEFAULT_KIND  # what the simulated side is (KIND_TITLES)

    @property
    def kind_title(self) -> str:
        return KIND_TITLES.get(self.kind, self.kind)

    def summary_rows(self) -> list[dict[str, Any]]:
        """One flat row per policy (lists joined) for the CSV summary."""
        rows = []
        for p in self.policies:
            row = {"kind": self.kind, **asdict(p)}
            for key in ("missing_sim", "missing_live", "unfinished_sim", "unfinished_live"):
                row[key] = " ".join(row[key])
            rows.append(row)
        return rows

    def to_json(self) -> dict[str, Any]:
        """Per-policy summary, ranking and the provenance of both sides."""
        def side(d: str, runs: dict[str, RunInfo]) -> dict[str, Any]:
            return {"dir": d,
                    "modes": sorted({r.mode for r in runs.values() if r.mode is not None}),
                    "workloads": sorted({r.workload for r in runs.values() if r.workload}),
                    "clusters": sorted({r.cluster for r in runs.values() if r.cluster}),
                    "runs": {k: asdict(v) for k, v in sorted(runs.items())}}

        return {"kind": self.kind, "kind_title": self.kind_title,
                "sim": side(self.sim_dir, self.sim_runs),
                "live": side(self.live_dir, self.live_runs),
                "policies": [_finite(asdict(p)) for p in self.policies],
                "ranking": _finite(asdict(self.ranking)),
                "only_sim": self.only_sim, "only_live": self.only_live}


def compare_runs(sim: Mapping[str, Sequence[Event]], live: Mapping[str, Sequence[Event]],
                 sim_dir: str = "sim", live_dir: str = "live") -> Comparison:
    """Compare every policy present on both sides (``{policy: events}`` each)."""
    sim_runs = {p: run_info(log_in(Path(sim_dir) / p), ev) for p, ev in sim.items()}
    live_runs = {p: run_info(log_in(Path(live_dir) / p), ev) for p, ev in live.items()}
    common = sorted(set(sim) & set(live))
    if not common:
        raise CompareError(
            f"no policy in both {sim_dir} ({', '.join(sorted(sim)) or 'none'}) and "
            f"{live_dir} ({', '.join(sorted(live)) or 'none'})")
    check_comparable(sim_runs, live_runs)
    kind = comparison_kind(sim_runs, common)
    only_sim, only_live = sorted(set(sim) - set(live)), sorted(set(live) - set(sim))
    if only_sim or only_live:
        log.warning("policies not compared: only simulated: %s; only live: %s",
                    ", ".join(only_sim) or "-", ", ".join(only_live) or "-")
    results, frames = [], []
    for policy in common:
        res, rows = compare_policy(policy, sim[policy], live[policy])
        if res.unmatched:
            log.warning("%s: %d job(s) not matched: %s", policy, res.unmatched, unmatched_names(res))
        results.append(res)
        frames.append(rows)
    return Comparison(sim_dir=str(sim_dir), live_dir=str(live_dir), policies=results,
                      jobs=pl.concat(frames), ranking=rank_policies(results),
                      sim_runs=sim_runs, live_runs=live_runs,
                      only_sim=only_sim, only_live=only_live, kind=kind)


def compare_dirs(sim_dir: str | Path, live_dir: str | Path) -> Comparison:
    """Load both results folders and compare them; raises :class:`CompareError`.
    The result's ``kind`` is the simulated side's header run_kind."""
    return compare_runs(load_results(sim_dir), load_results(live_dir), str(sim_dir), str(live_dir))


def _finite(d: dict[str, Any]) -> dict[str, Any]:
    """NaN/inf become null so the JSON stays strict."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}
