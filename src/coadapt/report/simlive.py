"""Simulated against live: how well the simulator predicts real job completion times.

A simulated run and a live run write the same layout (``DIR/<policy>/events.jsonl``)
and the same event kinds, so the comparison is a join of two sets of logs on
(policy, job). Everything here except :func:`load_results` works on event
lists and frames, so it is tested without touching the disk; the files, the
figure and the printed table are in :mod:`coadapt.report.simlive_view`.

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

import numpy as np
import polars as pl

from coadapt.eventlog import read_events
from coadapt.metrics import job_table

log = logging.getLogger(__name__)

Event = dict[str, Any]
SIM_LABEL = "simulated"
LIVE_LABEL = "live"
BAND = 0.10  # the +-10% band drawn around y = x

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

JOB_SCHEMA = {"policy": pl.Utf8, "job": pl.Utf8, "application": pl.Utf8,
              "jct_sim": pl.Float64, "jct_live": pl.Float64, "rel_err": pl.Float64,
              "status": pl.Utf8}


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


@dataclass
class PolicyComparison:
    """Sim-vs-live errors for one policy (times in seconds, errors as fractions)."""

    policy: str
    matched: int
    jobs_sim: int
    jobs_live: int
    missing_sim: list[str] = field(default_factory=list)
    missing_live: list[str] = field(default_factory=list)
    unfinished_sim: list[str] = field(default_factory=list)
    unfinished_live: list[str] = field(default_factory=list)
    mean_abs_err: float | None = None
    median_abs_err: float | None = None
    p90_abs_err: float | None = None
    bias: float | None = None
    mean_jct_sim: float | None = None
    mean_jct_live: float | None = None
    mean_jct_err: float | None = None
    median_jct_sim: float | None = None
    median_jct_live: float | None = None
    median_jct_err: float | None = None
    makespan_sim: float | None = None
    makespan_live: float | None = None
    makespan_err: float | None = None
    max_abs_err: float | None = None
    max_abs_err_job: str | None = None

    @property
    def unmatched(self) -> int:
        return (len(self.missing_sim) + len(self.missing_live) + len(self.unfinished_sim)
                + len(self.unfinished_live))


@dataclass
class Ranking:
    """Policies ordered by mean JCT (best first) on each side."""

    sim_order: list[str]
    live_order: list[str]
    same: bool
    kendall_tau: float | None = None
    kendall_p: float | None = None


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


# ---------------------------------------------------------------- pure logic


def run_info(path: str | Path, events: Sequence[Event]) -> RunInfo:
    """The header fields that decide whether two runs are comparable."""
    header = events[0] if events and events[0].get("kind") == "header" else {}
    cluster = header.get("cluster")
    return RunInfo(str(path), header.get("mode"), header.get("workload"),
                   None if cluster is None else str(cluster), header.get("run_kind"),
                   {k: header[k] for k in COMPARED_FIELDS if k in header})


def _ratio_err(sim: float | None, live: float | None) -> float | None:
    if sim is None or live is None or live <= 0:
        return None
    return sim / live - 1.0


def _span(frame: pl.DataFrame) -> float | None:
    """Makespan of a set of finished jobs: last completion minus first submission."""
    if frame.height == 0:
        return None
    return float(frame["complete"].max() - frame["submit"].min())


def _jobs(events: Sequence[Event]) -> pl.DataFrame:
    """job_table restricted to the columns the join needs, with fixed types
    (an empty log or one with no completion still yields the right columns)."""
    table = job_table(list(events))
    cols = {"job": pl.Utf8, "application": pl.Utf8, "submit": pl.Float64,
            "complete": pl.Float64, "jct": pl.Float64}
    if table.height == 0:
        return pl.DataFrame(schema=cols)
    return table.select([pl.col(c).cast(t) for c, t in cols.items()])


def compare_policy(policy: str, sim_events: Sequence[Event],
                   live_events: Sequence[Event]) -> tuple[PolicyComparison, pl.DataFrame]:
    """Join one policy's two logs by job name.

    Returns the summary and one row per job seen on either side, with ``status``
    ``matched``, ``missing_sim``/``missing_live`` (never submitted there) or
    ``unfinished_sim``/``unfinished_live`` (submitted, no completion). ``rel_err``
    is signed, ``(sim - live) / live``; the summary's error figures use its
    absolute value except ``bias``.
    """
    sim, live = _jobs(sim_events), _jobs(live_events)
    joined = sim.join(live, on="job", how="full", coalesce=True, suffix="_live")
    joined = joined.rename({"application": "application_sim", "submit": "submit_sim",
                            "complete": "complete_sim", "jct": "jct_sim"})
    joined = joined.with_columns(
        pl.coalesce("application_live", "application_sim").alias("application"),
        pl.when(pl.col("submit_sim").is_null()).then(pl.lit("missing_sim"))
        .when(pl.col("submit_live").is_null()).then(pl.lit("missing_live"))
        .when(pl.col("jct_sim").is_null()).then(pl.lit("unfinished_sim"))
        .when(pl.col("jct_live").is_null()).then(pl.lit("unfinished_live"))
        .otherwise(pl.lit("matched")).alias("status"),
        pl.when(pl.col("jct_live") > 0)
        .then((pl.col("jct_sim") - pl.col("jct_live")) / pl.col("jct_live"))
        .otherwise(None).alias("rel_err"),
    ).sort("job")

    def names(status: str) -> list[str]:
        return joined.filter(pl.col("status") == status)["job"].to_list()

    result = PolicyComparison(
        policy=policy, matched=0, jobs_sim=sim.height, jobs_live=live.height,
        missing_sim=names("missing_sim"), missing_live=names("missing_live"),
        unfinished_sim=names("unfinished_sim"), unfinished_live=names("unfinished_live"))
    ok = joined.filter((pl.col("status") == "matched") & pl.col("rel_err").is_not_null())
    zero_live = joined.filter((pl.col("status") == "matched") & pl.col("rel_err").is_null())
    if zero_live.height:
        log.warning("%s: %d job(s) with live JCT <= 0 left out of the errors: %s", policy,
                    zero_live.height, " ".join(zero_live["job"].to_list()))
    result.matched = ok.height
    if ok.height:
        err = ok["rel_err"].to_numpy()
        absolute = np.abs(err)
        worst = int(np.argmax(absolute))
        js, jl = ok["jct_sim"].to_numpy(), ok["jct_live"].to_numpy()
        result.mean_abs_err = float(absolute.mean())
        result.median_abs_err = float(np.median(absolute))
        result.p90_abs_err = float(np.percentile(absolute, 90))
        result.bias = float(err.mean())
        result.max_abs_err = float(absolute[worst])
        result.max_abs_err_job = ok["job"][worst]
        result.mean_jct_sim, result.mean_jct_live = float(js.mean()), float(jl.mean())
        result.mean_jct_err = _ratio_err(result.mean_jct_sim, result.mean_jct_live)
        result.median_jct_sim, result.median_jct_live = float(np.median(js)), float(np.median(jl))
        result.median_jct_err = _ratio_err(result.median_jct_sim, result.median_jct_live)
        result.makespan_sim = _span(ok.select(submit="submit_sim", complete="complete_sim"))
        result.makespan_live = _span(ok.select(submit="submit_live", complete="complete_live"))
        result.makespan_err = _ratio_err(result.makespan_sim, result.makespan_live)
    rows = joined.with_columns(pl.lit(policy).alias("policy")).select(list(JOB_SCHEMA))
    return result, rows.cast(JOB_SCHEMA)


def rank_policies(policies: Sequence[PolicyComparison]) -> Ranking:
    """Do sim and live agree on which policy gives the lowest mean JCT?

    Ties break by name so the orderings are deterministic; Kendall tau over the
    policies' mean JCTs needs at least three policies to say anything.
    """
    usable = [p for p in policies if p.mean_jct_sim is not None and p.mean_jct_live is not None]
    sim_order = [p.policy for p in sorted(usable, key=lambda p: (p.mean_jct_sim, p.policy))]
    live_order = [p.policy for p in sorted(usable, key=lambda p: (p.mean_jct_live, p.policy))]
    ranking = Ranking(sim_order, live_order, same=sim_order == live_order)
    if len(usable) >= 3:
        from scipy.stats import kendalltau

        res = kendalltau([p.mean_jct_sim for p in usable], [p.mean_jct_live for p in usable])
        tau, pvalue = float(res.statistic), float(res.pvalue)
        ranking.kendall_tau = None if math.isnan(tau) else tau
        ranking.kendall_p = None if math.isnan(pvalue) else pvalue
    return ranking


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


def compare_runs(sim: Mapping[str, Sequence[Event]], live: Mapping[str, Sequence[Event]],
                 sim_dir: str = "sim", live_dir: str = "live") -> Comparison:
    """Compare every policy present on both sides (``{policy: events}`` each)."""
    sim_runs = {p: run_info(Path(sim_dir) / p / "events.jsonl", ev) for p, ev in sim.items()}
    live_runs = {p: run_info(Path(live_dir) / p / "events.jsonl", ev) for p, ev in live.items()}
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


# ---------------------------------------------------------------- disk


def load_results(root: str | Path) -> dict[str, list[Event]]:
    """``{policy: events}`` for every ``root/<policy>/events.jsonl``; any unreadable
    or header-less log raises :class:`CompareError` naming it (file:line for a bad line)."""
    root = Path(root)
    if not root.is_dir():
        raise CompareError(f"{root}: no such results folder")
    logs = sorted(root.glob("*/events.jsonl"))
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
        if not events or events[0].get("kind") != "header":
            raise CompareError(f"{path}:1: first event is not a header; not a coadapt run log")
        out[path.parent.name] = events
    return out


def compare_dirs(sim_dir: str | Path, live_dir: str | Path) -> Comparison:
    """Load both results folders and compare them; raises :class:`CompareError`.
    The result's ``kind`` is the simulated side's header run_kind."""
    return compare_runs(load_results(sim_dir), load_results(live_dir), str(sim_dir), str(live_dir))


def _finite(d: dict[str, Any]) -> dict[str, Any]:
    """NaN/inf become null so the JSON stays strict."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def unmatched_names(p: PolicyComparison) -> str:
    parts = []
    for label, names in (("missing in simulated", p.missing_sim), ("missing in live", p.missing_live),
                         ("unfinished in simulated", p.unfinished_sim),
                         ("unfinished in live", p.unfinished_live)):
        if names:
            parts.append(f"{label}: {' '.join(names)}")
    return "; ".join(parts)
