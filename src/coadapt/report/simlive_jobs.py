"""One policy's sim-vs-live join, per job, and the policies' ranking.

Errors are relative to live: ``(sim - live) / live``. Means, medians and
makespans are taken over the *matched* jobs (finished on both sides), so both
sides describe the same set of jobs; jobs missing or unfinished on either side
are listed, never dropped without a word.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from coadapt.metrics import job_table
from coadapt.report.simlive_runs import Event

log = logging.getLogger(__name__)

JOB_SCHEMA = {"policy": pl.Utf8, "job": pl.Utf8, "application": pl.Utf8,
              "jct_sim": pl.Float64, "jct_live": pl.Float64, "rel_err": pl.Float64,
              "status": pl.Utf8}


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


def unmatched_names(p: PolicyComparison) -> str:
    """The jobs left out of the errors, by reason, for a warning or the table."""
    parts = []
    for label, names in (("missing in simulated", p.missing_sim), ("missing in live", p.missing_live),
                         ("unfinished in simulated", p.unfinished_sim),
                         ("unfinished in live", p.unfinished_live)):
        if names:
            parts.append(f"{label}: {' '.join(names)}")
    return "; ".join(parts)
