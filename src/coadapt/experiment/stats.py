"""Seed statistics of an experiment grid: means with bootstrap intervals, JCT
ratios paired by seed, the study's goals and the Pollux ablation.

Why paired ratios: the cells of one (tag, set, seed) replay the same workload
draw, so the per-seed ratio policy / baseline cancels the seed-to-seed
variation of the workload that a ratio of means would keep.

Why a caveat: a grid runs few seeds (typically 3 to 5). A BCa bootstrap
interval from so few points undercovers: its nominal 95% holds noticeably
less often. ``coverage_check`` measures by how much on normal samples, so the
report states it instead of implying precision it does not have.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Iterable

import numpy as np
import polars as pl
from scipy import stats

from coadapt.report.order import BASELINES, ordered_policies, policy_order  # noqa: F401

KEYS = ["tag", "set", "load", "policy"]
# What every cell's avg JCT is paired against (summary: vs_<name>): the two
# baselines and Pollux, the yardstick kind-aware policies (Sia, Gavel) must beat.
# Pollux stays out of BASELINES: it reads best last, not first.
PAIRED = (*BASELINES, "pollux")
# The ablation's definition: Pollux's two halves (registered variants, see
# coadapt.policies.pollux) against the whole; column prefix per policy.
ABLATION = {"pollux-batch-only": "batch_only", "pollux-workers-only": "workers_only",
            "pollux": "pollux"}
N_RESAMPLES = 2000
CONTENDED_LOAD = 2.0  # sets at or above this load are "contended" (goals)
MEANS = {  # summary column <- results column (mean over seeds)
    "p99_jct": "p99_jct", "utilization": "utilization", "max_rho": "max_rho",
    "p99_rho": "p99_rho", "unfair_frac": "unfair_frac", "jain": "jain_rho",
    "wait_mean": "wait_mean", "run_mean": "run_mean", "delay_mean": "delay_mean",
    "modeled_frac": "modeled_frac", "restarts_mean": "restarts_mean",
    "prio_avg_jct": "prio_avg_jct", "rest_avg_jct": "rest_avg_jct",
    "prio_mean_rho": "prio_mean_rho", "rest_mean_rho": "rest_mean_rho",
    "n_iso_mean": "n_iso_mean", "share_median": "share_median",
}
FLOATS = ("bandwidth", "load", "avg_jct", "p50_jct", "p99_jct", "makespan", "utilization",
          "mean_goodput", "max_rho", "p99_rho", "unfair_frac", "jain_rho", "restarts_mean",
          "wait_mean", "run_mean", "delay_mean", "modeled_frac", "jobs", "completed",
          "prio_avg_jct", "rest_avg_jct", "prio_mean_rho", "rest_mean_rho", "n_iso_mean",
          "share_median")


def policy_rank(name: str) -> int:
    """Position of a policy in ``policy_order()`` (unregistered ones after)."""
    ranks = {p: i for i, p in enumerate(policy_order())}
    return ranks.get(name, len(ranks))


def tag_bandwidth(tag: str) -> float | None:
    """Gbit/s from a tag like ``10gbps`` (for rows that lack ``bandwidth``)."""
    m = re.match(r"\s*([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)", tag or "")
    return float(m.group(1)) if m else None


def ordered_tags(df: pl.DataFrame) -> list[str]:
    """The network tags of ``df`` in numeric bandwidth order."""
    if df.height == 0:
        return []
    bw = pl.col("bandwidth") if "bandwidth" in df.columns else pl.lit(None, dtype=pl.Float64)
    t = df.group_by("tag").agg(bw.first().alias("bandwidth")).with_columns(
        pl.coalesce(pl.col("bandwidth").cast(pl.Float64),
                    pl.col("tag").map_elements(tag_bandwidth, return_dtype=pl.Float64)))
    return t.sort(["bandwidth", "tag"], nulls_last=True)["tag"].to_list()


def ordered_sets(df: pl.DataFrame) -> list[tuple[str, float | None]]:
    """The (set, load) pairs of ``df`` in load order."""
    if df.height == 0:
        return []
    s = df.group_by("set").agg(pl.col("load").first()).sort(["load", "set"], nulls_last=True)
    return list(s.iter_rows())


# ------------------------------------------------------------------ bootstrap
def _ci_rows(samples: np.ndarray, confidence: float, n_resamples: int,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) for each row of a (batch, n) array of finite values, in one
    vectorized scipy call: BCa from n >= 3, percentile for n == 2 and wherever
    BCa degenerates (NaN ends); lo = hi = mean for n == 1 or all-equal rows.
    The interval is widened to contain the sample mean if BCa shifted it off."""
    mean = samples.mean(axis=1)
    lo, hi = mean.copy(), mean.copy()
    n = samples.shape[1]
    if n < 2 or samples.shape[0] == 0:
        return lo, hi
    scale = np.maximum(np.abs(mean), 1.0)
    todo = np.flatnonzero(np.ptp(samples, axis=1) > 1e-12 * scale)
    if todo.size == 0:
        return lo, hi

    def run(rows: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DegenerateDataWarning: handled below
            res = stats.bootstrap((samples[rows],), np.mean, n_resamples=n_resamples,
                                  confidence_level=confidence, method=method, axis=-1, rng=rng)
        return (np.atleast_1d(res.confidence_interval.low).astype(float),
                np.atleast_1d(res.confidence_interval.high).astype(float))

    a, b = run(todo, "BCa" if n >= 3 else "percentile")
    bad = ~(np.isfinite(a) & np.isfinite(b))
    if bad.any():
        a[bad], b[bad] = run(todo[bad], "percentile")
    lo[todo] = np.minimum(a, mean[todo])
    hi[todo] = np.maximum(b, mean[todo])
    return lo, hi


def bootstrap_ci(values: Iterable[float | None] | np.ndarray, confidence: float = 0.95,
                 seed: int = 0, n_resamples: int = N_RESAMPLES) -> tuple[float, float, float]:
    """(mean, lo, hi) of the finite values with a BCa bootstrap interval
    (percentile where BCa is degenerate or n < 3; lo = hi = mean for n == 1;
    all NaN for no values). With few seeds the interval undercovers (see
    ``coverage_check``)."""
    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    lo, hi = _ci_rows(x[None, :], confidence, n_resamples, np.random.default_rng(seed))
    return float(x.mean()), float(lo[0]), float(hi[0])


def coverage_check(n_seeds: int = 5, trials: int = 400, seed: int = 0,
                   confidence: float = 0.95, n_resamples: int = N_RESAMPLES) -> float:
    """Empirical coverage of ``bootstrap_ci``'s procedure: the share of
    ``trials`` standard-normal samples of size ``n_seeds`` whose interval holds
    the true mean 0. Below ``confidence`` means the interval is too narrow for
    that many seeds. One vectorized bootstrap over all trials (well under 5 s)."""
    if n_seeds < 2 or trials < 1:
        return float("nan")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((trials, n_seeds))
    lo, hi = _ci_rows(x, confidence, n_resamples, rng)
    return float(np.mean((lo <= 0.0) & (hi >= 0.0)))


# -------------------------------------------------------------------- summary
def _prepare(results: pl.DataFrame) -> pl.DataFrame:
    """Missing metric columns as nulls, floats as Float64 with NaN -> null (so
    means skip undefined values), bandwidth from the tag where absent."""
    df = results
    for c, dtype in (("tag", pl.String), ("set", pl.String), ("policy", pl.String),
                     ("seed", pl.Int64)):
        if c not in df.columns:
            df = df.with_columns(pl.lit(None, dtype=dtype).alias(c))
    for c in FLOATS:
        if c not in df.columns:
            df = df.with_columns(pl.lit(None, dtype=pl.Float64).alias(c))
    df = df.with_columns([pl.col(c).cast(pl.Float64).fill_nan(None) for c in FLOATS])
    return df.with_columns(
        pl.col("tag").cast(pl.String),
        pl.col("set").cast(pl.String),
        pl.col("policy").cast(pl.String),
        pl.coalesce(pl.col("bandwidth"),
                    pl.col("tag").map_elements(tag_bandwidth, return_dtype=pl.Float64)
                    ).alias("bandwidth"),
    )


def _cis(lists: Iterable[list[float] | None], prefix: str, geometric: bool = False) -> pl.DataFrame:
    """mean/lo/hi columns from a column of per-group value lists; ``geometric``:
    the geometric mean and its interval (bootstrapped on the logs), the right
    average of ratios (the arithmetic mean of x/y and y/x is biased above 1)."""
    if geometric:
        out = [np.exp(bootstrap_ci(np.log(np.asarray(v or [], dtype=float)))) for v in lists]
    else:
        out = [bootstrap_ci(v or []) for v in lists]
    arr = np.array(out, dtype=float).reshape(-1, 3)
    return pl.DataFrame({prefix: arr[:, 0], f"{prefix}_lo": arr[:, 1],
                         f"{prefix}_hi": arr[:, 2]}).fill_nan(None)


def _paired(df: pl.DataFrame, baseline: str) -> pl.DataFrame:
    """Per group: geometric mean of avg_jct / baseline avg_jct over shared seeds, with CI."""
    name = f"vs_{baseline}"
    base = (df.filter(pl.col("policy") == baseline)
            .group_by(["tag", "set", "seed"]).agg(pl.col("avg_jct").mean().alias("_base")))
    ratios = (df.join(base, on=["tag", "set", "seed"], how="inner")
              .with_columns((pl.col("avg_jct") / pl.col("_base")).alias("_r"))
              .filter(pl.col("_r").is_finite())
              .group_by(KEYS).agg(pl.col("_r").alias("_rs"), pl.len().alias(f"{name}_n")))
    return pl.concat([ratios.select(KEYS + [f"{name}_n"]),
                      _cis(ratios["_rs"].to_list(), name, geometric=True)], how="horizontal")


def _sort(df: pl.DataFrame, *extra: str) -> pl.DataFrame:
    """By bandwidth (numerically), load, set, then policy (baselines first)."""
    ranks = {p: i for i, p in enumerate(policy_order())}
    ranked = df.with_columns(
        pl.col("policy").replace_strict(ranks, default=len(ranks), return_dtype=pl.Int64)
        .alias("_rank") if "policy" in df.columns else pl.lit(0).alias("_rank"))
    cols = [c for c in ("bandwidth", "tag", "load", "set", "_rank", "policy", *extra)
            if c in ranked.columns]
    return ranked.sort(cols, nulls_last=True).drop("_rank")


def summary(results: pl.DataFrame) -> pl.DataFrame:
    """One row per (tag, set, load, policy): means over seeds with a bootstrap
    CI on avg JCT, the worst max rho, and avg JCT ratios to ``fixed``,
    ``dynamic`` and ``pollux`` paired by seed (``PAIRED``; null where that
    policy did not run)."""
    df = _prepare(results)
    agg = df.group_by(KEYS).agg(
        pl.col("bandwidth").first(),
        pl.col("seed").n_unique().alias("seeds"),
        (pl.col("completed").sum() / pl.col("jobs").sum()).alias("completed_frac"),
        pl.col("avg_jct").drop_nulls().alias("_jct"),
        *[pl.col(src).mean().alias(dst) for dst, src in MEANS.items()],
        pl.col("max_rho").max().alias("max_rho_worst"),
    )
    agg = pl.concat([agg.drop("_jct"), _cis(agg["_jct"].to_list(), "avg_jct")],
                    how="horizontal")
    for b in PAIRED:
        agg = agg.join(_paired(df, b), on=KEYS, how="left", nulls_equal=True)
    cols = ["tag", "bandwidth", "set", "load", "policy", "seeds", "completed_frac",
            "avg_jct", "avg_jct_lo", "avg_jct_hi", "p99_jct", "utilization", "max_rho",
            "max_rho_worst", "p99_rho", "unfair_frac", "jain", "wait_mean", "run_mean",
            "delay_mean", "restarts_mean", "modeled_frac", "n_iso_mean", "share_median",
            "prio_avg_jct", "rest_avg_jct", "prio_mean_rho", "rest_mean_rho"]
    for b in PAIRED:
        cols += [f"vs_{b}", f"vs_{b}_lo", f"vs_{b}_hi", f"vs_{b}_n"]
    return _sort(agg.select(cols))


# ---------------------------------------------------------------------- goals
GOAL_COLUMNS = {"tag": pl.String, "bandwidth": pl.Float64, "set": pl.String,
                "load": pl.Float64, "goal": pl.String, "target": pl.Float64,
                "value": pl.Float64, "value_lo": pl.Float64, "value_hi": pl.Float64,
                "met": pl.Boolean}


def goals(summary: pl.DataFrame) -> pl.DataFrame:
    """The study's goals per (tag, set), where Pollux and the baseline ran.
    Contended sets (load >= 2): Pollux's avg JCT <= 0.65 x fixed's and
    <= 0.85 x dynamic's (paired by seed), and its max rho (mean over seeds of
    each run's max rho) no worse than dynamic's. Lighter sets: Pollux no
    slower than fixed. ``met`` compares the point estimate; value_lo/hi give
    the ratio's CI so a reader sees how close a call is."""
    rows: list[dict] = []
    if summary.height == 0:
        return pl.DataFrame(schema=GOAL_COLUMNS)
    dyn = {(r["tag"], r["set"]): r
           for r in summary.filter(pl.col("policy") == "dynamic").iter_rows(named=True)}

    def add(r: dict, goal: str, target: float, value: float | None,
            lo: float | None = None, hi: float | None = None, n: int | None = None) -> None:
        if value is None or target is None or not np.isfinite(value):
            return
        if n is not None and n < 2:  # one pair: no interval to show
            lo = hi = None
        rows.append({"tag": r["tag"], "bandwidth": r["bandwidth"], "set": r["set"],
                     "load": r["load"], "goal": goal, "target": float(target),
                     "value": float(value), "value_lo": lo, "value_hi": hi,
                     "met": bool(value <= target + 1e-12)})

    for r in summary.filter(pl.col("policy") == "pollux").iter_rows(named=True):
        if r["load"] is not None and r["load"] >= CONTENDED_LOAD:
            add(r, "pollux avg JCT / fixed (paired by seed) <= 0.65", 0.65, r["vs_fixed"],
                r["vs_fixed_lo"], r["vs_fixed_hi"], r["vs_fixed_n"])
            add(r, "pollux avg JCT / dynamic (paired by seed) <= 0.85", 0.85, r["vs_dynamic"],
                r["vs_dynamic_lo"], r["vs_dynamic_hi"], r["vs_dynamic_n"])
            d = dyn.get((r["tag"], r["set"]))
            if d is not None:
                add(r, "pollux max rho <= dynamic's (each run's max rho, mean over seeds)",
                    d["max_rho"], r["max_rho"])
        else:
            add(r, "pollux avg JCT / fixed (paired by seed) <= 1.0 (light load)", 1.0,
                r["vs_fixed"], r["vs_fixed_lo"], r["vs_fixed_hi"], r["vs_fixed_n"])
    return pl.DataFrame(rows, schema=GOAL_COLUMNS)


def seed_basis(summary: pl.DataFrame) -> tuple[int, str]:
    """The seed count the intervals rest on, and what it is: the fewest
    seeds of a named workload set's cell (a CSV workload is one fixed draw
    and runs one seed), or, without named sets, the most common count."""
    from coadapt.workloads.sets import SETS

    if summary.height == 0:
        return 0, "no cells"
    named = summary.filter(pl.col("set").is_in(list(SETS)))
    if named.height:
        return int(named["seeds"].min() or 0), "the named workload sets' cells"
    counts = Counter(int(n) for n in summary["seeds"].drop_nulls())
    if not counts:
        return 0, "no cells"
    n = max(counts, key=lambda k: (counts[k], -k))  # a tie: the fewer seeds
    return n, "the most common seed count of the cells"


def ablation(summary: pl.DataFrame) -> pl.DataFrame:
    """Pollux's two halves against the whole, per (tag, set): avg JCT ratios
    to fixed and dynamic for batch-only, workers-only and pollux. Empty when
    neither half ran."""
    halves = [p for p in ABLATION if p != "pollux"]
    present = summary.filter(pl.col("policy").is_in(list(ABLATION)))
    if not present.filter(pl.col("policy").is_in(halves)).height:
        return pl.DataFrame()
    table = present.select("tag", "bandwidth", "set", "load").unique()
    for policy, short in ABLATION.items():
        part = present.filter(pl.col("policy") == policy).select(
            "tag", "set", pl.col("vs_fixed").alias(f"{short}_vs_fixed"),
            pl.col("vs_dynamic").alias(f"{short}_vs_dynamic"))
        table = table.join(part, on=["tag", "set"], how="left")
    return _sort(table)
