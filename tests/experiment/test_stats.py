"""Seed statistics of a grid on synthetic rows whose answers are known by hand."""

from __future__ import annotations

import math
import re
import time

import numpy as np
import polars as pl
import pytest

from coadapt.experiment.stats import (
    ABLATION,
    ablation,
    bootstrap_ci,
    coverage_check,
    goals,
    ordered_policies,
    policy_order,
    seed_basis,
    summary,
)
from coadapt.experiment.text import format_summary
from coadapt.policies import PRIMARY, policy_names

FIXED = [100.0, 110.0, 120.0, 130.0, 140.0]


def row(policy: str, seed: int, avg_jct: float | None, *, tag: str = "10gbps",
        bandwidth: float | None = 10.0, set_: str = "cpu-load4", load: float = 4.0,
        max_rho: float = 2.0, **extra) -> dict:
    return {"key": f"{tag}__{set_}__{policy}__s{seed}", "tag": tag, "bandwidth": bandwidth,
            "set": set_, "load": load, "policy": policy, "seed": seed, "jobs": 10,
            "completed": 10, "avg_jct": avg_jct, "p99_jct": None if avg_jct is None else 2 * avg_jct,
            "utilization": 0.5, "max_rho": max_rho, "p99_rho": max_rho, "unfair_frac": 0.1,
            "jain_rho": 0.9, "wait_mean": 10.0, "run_mean": 50.0, "modeled_frac": 0.0,
            "wall_s": 1.0, "log": "logs/x.jsonl.gz", **extra}


def grid(scale: dict[str, float], **kw) -> pl.DataFrame:
    return pl.DataFrame([row(p, s, f * k, **kw) for p, k in scale.items()
                         for s, f in enumerate(FIXED)])


def only(df: pl.DataFrame, **match) -> dict:
    for k, v in match.items():
        df = df.filter(pl.col(k) == v)
    assert df.height == 1, df
    return df.row(0, named=True)


def test_paired_ratio_is_exact_and_inside_its_interval():
    s = summary(grid({"fixed": 1.0, "pollux": 0.5}))
    p = only(s, policy="pollux")
    assert p["vs_fixed"] == 0.5
    assert p["vs_fixed_lo"] <= 0.5 <= p["vs_fixed_hi"]
    assert p["vs_fixed_n"] == 5 and p["seeds"] == 5
    assert only(s, policy="fixed")["vs_fixed"] == 1.0
    assert p["avg_jct"] == pytest.approx(60.0)
    assert p["avg_jct_lo"] < 60.0 < p["avg_jct_hi"]  # the values vary: a real interval


def test_ratios_are_paired_by_seed_not_a_ratio_of_means():
    df = pl.DataFrame([row("fixed", 0, 100.0), row("fixed", 1, 1000.0),
                       row("pollux", 0, 50.0), row("pollux", 1, 2000.0)])
    p = only(summary(df), policy="pollux")
    # the geometric mean of 0.5 and 2: not 2050 / 1100, nor the biased (0.5 + 2) / 2
    assert p["vs_fixed"] == pytest.approx(1.0)
    assert p["vs_fixed_lo"] <= p["vs_fixed"] <= p["vs_fixed_hi"]


def test_the_ratio_is_the_geometric_mean_of_the_per_seed_ratios():
    per_seed = [0.4, 0.5, 0.9, 0.6, 0.3]
    df = pl.DataFrame([row("fixed", s, f) for s, f in enumerate(FIXED)]
                      + [row("pollux", s, f * r)
                         for s, (f, r) in enumerate(zip(FIXED, per_seed, strict=True))])
    p = only(summary(df), policy="pollux")
    assert p["vs_fixed"] == pytest.approx(math.prod(per_seed) ** (1 / 5))
    assert p["vs_fixed"] < sum(per_seed) / 5  # the arithmetic mean is biased up
    assert p["vs_fixed_lo"] < p["vs_fixed"] < p["vs_fixed_hi"]
    assert 0.3 <= p["vs_fixed_lo"] and p["vs_fixed_hi"] <= 0.9


def test_a_seed_without_its_baseline_is_left_out_of_the_ratio():
    df = pl.DataFrame([row("fixed", 0, 100.0), row("fixed", 1, 200.0),
                       row("pollux", 0, 50.0), row("pollux", 1, 100.0), row("pollux", 2, 1.0)])
    p = only(summary(df), policy="pollux")
    assert p["vs_fixed"] == 0.5 and p["vs_fixed_n"] == 2 and p["seeds"] == 3


def test_ratio_is_null_where_the_baseline_did_not_run():
    df = pl.concat([grid({"fixed": 1.0, "pollux": 0.5}),
                    grid({"pollux": 0.5}, set_="cpu-load1", load=1.0)])
    s = summary(df)
    assert s["vs_dynamic"].null_count() == s.height  # no dynamic anywhere
    light = only(s, set="cpu-load1", policy="pollux")
    assert light["vs_fixed"] is None and light["vs_fixed_lo"] is None
    assert only(s, set="cpu-load4", policy="pollux")["vs_fixed"] == 0.5


def test_means_with_ci_contain_the_mean_and_skip_undefined_values():
    df = pl.DataFrame([row("fixed", s, v) for s, v in enumerate([90.0, 100.0, 130.0, None])]
                      + [row("fixed", 9, float("nan"))])
    f = only(summary(df), policy="fixed")
    assert f["avg_jct"] == pytest.approx(320 / 3)
    assert f["avg_jct_lo"] <= f["avg_jct"] <= f["avg_jct_hi"]
    assert f["avg_jct_lo"] < f["avg_jct_hi"]
    assert f["seeds"] == 5 and f["max_rho_worst"] == 2.0


def test_worst_max_rho_is_the_max_over_seeds():
    df = pl.DataFrame([row("pollux", s, 100.0, max_rho=r) for s, r in enumerate([1.0, 3.0, 2.0])])
    p = only(summary(df), policy="pollux")
    assert p["max_rho"] == pytest.approx(2.0) and p["max_rho_worst"] == 3.0


def test_tags_sort_by_bandwidth_numerically_then_load_then_policy():
    parts = []
    for tag, bw in (("100gbps", 100.0), ("1gbps", 1.0), ("10gbps", 10.0), ("0.5gbps", 0.5)):
        for set_, load in (("cpu-load8", 8.0), ("cpu-load1", 1.0)):
            parts.append(grid({"pollux": 0.5, "fixed": 1.0, "dynamic": 0.7}, tag=tag,
                              bandwidth=bw, set_=set_, load=load))
    s = summary(pl.concat(parts))
    assert list(dict.fromkeys(s["tag"])) == ["0.5gbps", "1gbps", "10gbps", "100gbps"]
    first = s.filter(pl.col("tag") == "1gbps")
    assert first["load"].to_list() == [1.0] * 3 + [8.0] * 3
    assert first["policy"].to_list()[:3] == ["fixed", "dynamic", "pollux"]


def test_tag_order_falls_back_to_the_tag_when_bandwidth_is_missing():
    df = pl.concat([grid({"fixed": 1.0}, tag=t, bandwidth=None)
                    for t in ("100gbps", "10gbps", "1gbps")])
    assert summary(df)["tag"].to_list() == ["1gbps", "10gbps", "100gbps"]


def test_goals_on_a_contended_and_a_light_set():
    heavy = grid({"fixed": 1.0, "dynamic": 0.55, "pollux": 0.5}, set_="cpu-load4", load=4.0)
    heavy = heavy.with_columns(
        pl.when(pl.col("policy") == "pollux").then(2.0).otherwise(1.5).alias("max_rho"))
    light = grid({"fixed": 1.0, "pollux": 1.2}, set_="cpu-load1", load=1.0)
    g = goals(summary(pl.concat([heavy, light])))
    assert g.height == 4
    by = {(r["set"], next(w for w in ("rho", "fixed", "dynamic") if w in r["goal"])): r
          for r in g.iter_rows(named=True)}
    fixed4, dyn4, rho4 = by[("cpu-load4", "fixed")], by[("cpu-load4", "dynamic")], \
        by[("cpu-load4", "rho")]
    assert fixed4["met"] and fixed4["target"] == 0.65 and fixed4["value"] == 0.5
    assert not dyn4["met"] and dyn4["value"] == pytest.approx(0.5 / 0.55)
    assert not rho4["met"] and rho4["value"] == 2.0 and rho4["target"] == 1.5
    assert "mean over seeds" in rho4["goal"]
    light_goal = by[("cpu-load1", "fixed")]
    assert light_goal["target"] == 1.0 and light_goal["value"] == pytest.approx(1.2)
    assert not light_goal["met"]


def test_a_single_pair_gives_a_goal_no_interval_at_any_load():
    for set_, load in (("cpu-load4", 4.0), ("cpu-load1", 1.0)):
        df = pl.DataFrame([row("fixed", 0, 100.0, set_=set_, load=load),
                           row("fixed", 1, 120.0, set_=set_, load=load),
                           row("pollux", 0, 80.0, set_=set_, load=load)])
        g = goals(summary(df))
        assert g.height == 1 and g["value"][0] == pytest.approx(0.8), set_
        assert g["value_lo"][0] is None and g["value_hi"][0] is None, set_


def test_goals_need_pollux_and_the_baseline():
    assert goals(summary(grid({"fixed": 1.0, "dynamic": 0.7}))).height == 0
    only_fixed = goals(summary(grid({"fixed": 1.0, "pollux": 0.6})))
    assert only_fixed["goal"].to_list() == ["pollux avg JCT / fixed (paired by seed) <= 0.65"]
    assert only_fixed["met"].to_list() == [True]


def test_ablation_compares_the_halves_with_pollux():
    s = summary(grid({"fixed": 1.0, "dynamic": 0.8, "pollux": 0.5, "pollux-batch-only": 0.9,
                      "pollux-workers-only": 0.6}))
    a = ablation(s)
    assert a.height == 1
    r = a.row(0, named=True)
    assert r["batch_only_vs_fixed"] == pytest.approx(0.9)
    assert r["workers_only_vs_fixed"] == pytest.approx(0.6)
    assert r["pollux_vs_fixed"] == 0.5
    assert r["pollux_vs_dynamic"] == pytest.approx(0.5 / 0.8)
    assert ablation(summary(grid({"fixed": 1.0, "pollux": 0.5}))).height == 0


def test_policy_order_comes_from_the_registry():
    order = policy_order()
    variants = policy_names(primary=False, variants=True)
    assert sorted(order) == policy_names(variants=True)  # every registered policy, once
    assert order[:2] == ["fixed", "dynamic"] and order[-1] == "pollux"
    others = [p for p in PRIMARY if p not in ("fixed", "dynamic", "pollux")]
    assert order[2:2 + len(others)] == sorted(others)
    assert order[2 + len(others):-1] == variants
    assert ordered_policies(["zeta", "pollux", "alpha", "fixed", "pollux"]) == \
        ["fixed", "pollux", "alpha", "zeta"]  # unregistered names last, by name


def test_the_ablation_names_registered_variants_of_pollux():
    halves = [p for p in ABLATION if p != "pollux"]
    assert "pollux" in ABLATION and "pollux" in PRIMARY
    assert set(halves) <= set(policy_names(primary=False, variants=True))


def test_tables_list_policies_in_the_registry_order():
    s = summary(grid({p: 1.0 for p in reversed(policy_order())}))
    assert s["policy"].to_list() == policy_order()
    header = format_summary(s, goals(s)).splitlines()[1].split()
    assert header[2:2 + len(policy_order())] == policy_order()


def test_seed_basis_is_the_named_sets_or_the_most_common_count():
    named = grid({"fixed": 1.0, "pollux": 0.5})  # cpu-load4 at 5 seeds
    csv = pl.DataFrame([row("fixed", 0, 100.0, set_="tiny", load=1.5)])
    assert seed_basis(summary(pl.concat([named, csv]))) == (5, "the named workload sets' cells")
    other = pl.concat([grid({"fixed": 1.0}, set_="a"), grid({"fixed": 1.0}, set_="b"), csv])
    assert seed_basis(summary(other))[0] == 5  # two sets of 5 seeds, one of 1
    assert seed_basis(summary(pl.DataFrame()))[0] == 0


def test_bootstrap_ci_edge_cases():
    assert bootstrap_ci([7.0]) == (7.0, 7.0, 7.0)
    assert bootstrap_ci([3.0, 3.0, 3.0, 3.0]) == (3.0, 3.0, 3.0)
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    m, lo, hi = bootstrap_ci([1.0, 2.0])  # percentile at n = 2
    assert (m, lo, hi) == (1.5, 1.0, 2.0)
    m, lo, hi = bootstrap_ci([1.0, None, 3.0, float("nan"), 8.0])
    assert m == pytest.approx(4.0) and lo <= m <= hi and lo < hi
    # Deterministic for a seed.
    assert bootstrap_ci(np.arange(6.0), seed=3) == bootstrap_ci(np.arange(6.0), seed=3)


def test_bootstrap_ci_narrows_with_more_data():
    rng = np.random.default_rng(1)
    small = bootstrap_ci(rng.normal(10, 1, 5))
    large = bootstrap_ci(rng.normal(10, 1, 200))
    assert large[2] - large[1] < small[2] - small[1]
    assert large[1] < 10 < large[2]


def test_coverage_check_shows_few_seeds_undercover_and_is_fast():
    t0 = time.perf_counter()
    five = coverage_check(n_seeds=5, trials=400)
    assert time.perf_counter() - t0 < 5.0
    assert 0.6 < five < 0.93  # BCa at n = 5 misses its nominal 95%
    assert coverage_check(n_seeds=10, trials=400) > coverage_check(n_seeds=3, trials=400)
    assert math.isnan(coverage_check(n_seeds=1))


def test_summary_of_no_cells_is_empty_with_its_columns():
    s = summary(pl.DataFrame())
    assert s.height == 0 and {"vs_fixed", "avg_jct_lo", "max_rho_worst"} <= set(s.columns)
    assert goals(s).height == 0 and ablation(s).height == 0


def pollux_paired_grid() -> pl.DataFrame:
    """Two seeds; per-seed avg JCT chosen so the paired ratios work out by hand."""
    jct = {"fixed": (100.0, 200.0), "sia": (75.0, 80.0), "pollux": (50.0, 160.0)}
    p99 = {"fixed": 3.0, "sia": 1.25, "pollux": 1.5}
    return pl.DataFrame([row(p, s, v, p99_rho=p99[p] + s) for p, vs in jct.items()
                         for s, v in enumerate(vs)])


def test_summary_pairs_every_policy_with_pollux_by_seed():
    s = summary(pollux_paired_grid())
    sia, fixed, px = (only(s, policy=p) for p in ("sia", "fixed", "pollux"))
    assert sia["vs_pollux"] == pytest.approx(math.sqrt(1.5 * 0.5))  # 75/50, 80/160
    assert fixed["vs_pollux"] == pytest.approx(math.sqrt(2.0 * 1.25))  # 100/50, 200/160
    assert px["vs_pollux"] == pytest.approx(1.0) and px["vs_pollux_n"] == 2
    assert sia["vs_pollux_lo"] <= sia["vs_pollux"] <= sia["vs_pollux_hi"]
    assert px["vs_fixed"] == pytest.approx(math.sqrt(0.5 * 0.8))
    assert sia["p99_rho"] == pytest.approx(1.75)  # mean of 1.25 and 2.25 over seeds
    assert s["vs_dynamic"].null_count() == s.height  # dynamic did not run
    no_pollux = summary(pollux_paired_grid().filter(pl.col("policy") != "pollux"))
    assert no_pollux["vs_pollux"].null_count() == no_pollux.height
    assert no_pollux["vs_pollux_n"].null_count() == no_pollux.height


def test_terminal_text_grids_ratio_to_pollux_with_p99_rho():
    s = summary(pollux_paired_grid())
    text = format_summary(s, goals(s))
    assert "pollux/fixed" in text and "max rho pollux/dynamic" in text  # first grid kept
    _, grid_ = text.split("avg JCT ratio to pollux (paired by seed) / p99 rho\n")
    header, _, cells = (re.split(r"\s{2,}", ln.strip()) for ln in grid_.splitlines()[:3])
    assert header[0] == "set (load)" and cells[0] == "cpu-load4 (4x)"
    by = dict(zip(header[1:], cells[1:], strict=True))
    assert by["sia"] == f"{math.sqrt(0.75):.2f} / 1.75"
    assert by["fixed"] == f"{math.sqrt(2.5):.2f} / 3.50"
    assert by["pollux"] == "1.00 / 2.00"
