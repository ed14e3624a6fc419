"""The experiment's terminal summary: the run table's conventions (baseline
first, the fixed order, units once, the shared legend, the samples it rests on)."""

from __future__ import annotations

import re

import polars as pl

from coadapt.experiment.stats import goals, summary
from coadapt.experiment.text import format_summary


def cell(policy: str, seed: int, avg: float) -> dict:
    return {"key": f"t__s__{policy}__{seed}", "tag": "10gbps", "bandwidth": 10.0,
            "set": "cpu-load4", "load": 4.0, "policy": policy, "seed": seed, "jobs": 4,
            "completed": 4, "avg_jct": avg, "p99_jct": 2 * avg, "utilization": 0.5,
            "max_rho": 2.0, "p99_rho": 1.5, "unfair_frac": 0.1, "jain_rho": 0.9,
            "wait_mean": 1.0, "run_mean": 5.0, "modeled_frac": 0.0, "wall_s": 1.0}


def table(seeds: int) -> pl.DataFrame:
    return summary(pl.DataFrame([cell(p, s, k * (60.0 + s)) for p, k in
                                 (("pollux", 0.5), ("fixed", 1.0), ("sia", 0.8))
                                 for s in range(seeds)]))


def header(text: str) -> list[str]:
    return re.split(r"\s{2,}", text.splitlines()[1].strip())


def test_baseline_first_then_the_fixed_order():
    s = table(3)
    assert header(format_summary(s, goals(s)))[1:4] == ["fixed", "sia", "pollux"]
    assert header(format_summary(s, goals(s), baseline="pollux"))[1:4] == ["pollux", "fixed",
                                                                          "sia"]


def test_units_once_legend_and_samples():
    s = table(3)
    text = format_summary(s, goals(s))
    assert "mean JCT in minutes [95% CI over seeds]" in text
    legend = [ln.strip() for ln in text.splitlines() if ln.startswith("  ")]
    assert any(ln.startswith("rho ") and "JCT / T_iso" in ln for ln in legend)
    assert any(ln.startswith("p99 rho") for ln in legend)
    assert any(ln.startswith("pollux/X") for ln in legend)
    assert "means over 3 seeds per cell, 95% bootstrap CI in brackets" in text


def test_one_seed_is_one_sample():
    s = table(1)
    assert "one sample per cell (one seed): no interval" in format_summary(s, goals(s))
