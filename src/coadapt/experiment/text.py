"""The study's summary as plain text for the terminal (the report has the rest)."""

from __future__ import annotations

import polars as pl

from coadapt.report.order import ordered_policies
from coadapt.report.table import legend_lines, legend_of, text_grid


def _minutes(v: float | None) -> str:
    return "-" if v is None else f"{v / 60:.2f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _set_rows(part: pl.DataFrame) -> list[tuple[str, dict[str, dict]]]:
    """Per set of one network, in the summary's order: its 'set (load)' label
    and its rows by policy (one grouping, shared by both grids)."""
    out = []
    for (name,), grp in part.group_by("set", maintain_order=True):
        by = {r["policy"]: r for r in grp.iter_rows(named=True)}
        load = next(iter(by.values()))["load"]
        out.append((f"{name} ({load:.3g}x)" if load is not None else str(name), by))
    return out


def _jct_row(by: dict[str, dict], policies: list[str]) -> list[str]:
    """Mean JCT [CI] per policy, then pollux's ratios and max rho against dynamic."""
    line = []
    for p in policies:
        r = by.get(p)
        line.append("-" if r is None else
                    f"{_minutes(r['avg_jct'])} [{_minutes(r['avg_jct_lo'])}, "
                    f"{_minutes(r['avg_jct_hi'])}]")
    px, dyn = by.get("pollux"), by.get("dynamic")
    line += [_ratio(px["vs_fixed"]) if px else "-", _ratio(px["vs_dynamic"]) if px else "-"]
    line.append(f"{_ratio(px['max_rho']) if px else '-'} / "
                f"{_ratio(dyn['max_rho']) if dyn else '-'}")
    return line


def _pollux_row(by: dict[str, dict], policies: list[str]) -> list[str]:
    """'ratio / p99 rho' per policy: each policy's avg JCT over pollux's
    (paired by seed; pollux's own reads 1.00) and its p99 rho, so a
    kind-aware policy's speed and fairness read against Pollux side by side."""
    return ["-" if (r := by.get(p)) is None else
            f"{_ratio(r['vs_pollux'])} / {_ratio(r['p99_rho'])}" for p in policies]


def samples(summary: pl.DataFrame) -> str:
    """What the means rest on: N seeds per cell, or one sample."""
    seeds = sorted(set(summary["seeds"].drop_nulls().to_list())) if summary.height else []
    if not seeds or seeds == [1]:
        return ("one sample per cell (one seed): no interval; --seeds N gives means with "
                "95% CIs")
    n = "/".join(map(str, seeds))
    return f"means over {n} seeds per cell, 95% bootstrap CI in brackets"


LEGEND = (("mean JCT", "each run's mean JCT (submission to completion, completed jobs), "
                         "averaged over seeds"),
          ("pollux/X", "pollux's mean JCT / X's, paired by seed (below 1: pollux faster)"),
          ("ratio to pollux", "the policy's mean JCT / pollux's, paired by seed"))


def format_summary(summary: pl.DataFrame, goals: pl.DataFrame, *,
                   baseline: str = "fixed") -> str:
    """Per network: mean JCT in minutes [95% CI] per set and policy (the
    baseline first, then the fixed order of ``report.order``) with pollux's
    paired ratios; then every policy's ratio to pollux and p99 rho; the
    legend; then the goals."""
    out = []
    policies = ordered_policies(summary["policy"].to_list(), baseline)
    for tag in summary["tag"].unique(maintain_order=True):
        sets = _set_rows(summary.filter(pl.col("tag") == tag))
        out.append(f"SIMULATED, network {tag}: mean JCT in minutes [95% CI over seeds]")
        out.append(text_grid(["set (load)", *policies, "pollux/fixed", "pollux/dynamic",
                              "max rho pollux/dynamic"],
                             [[label, *_jct_row(by, policies)] for label, by in sets]))
        out.append("")
        out.append(f"SIMULATED, network {tag}: avg JCT ratio to pollux (paired by seed) "
                   "/ p99 rho")
        out.append(text_grid(["set (load)", *policies],
                             [[label, *_pollux_row(by, policies)] for label, by in sets]))
        out.append("")
    if summary.height:
        out += legend_lines([*LEGEND, *legend_of(["max rho", "p99 rho"], baseline)])
        out += [samples(summary), ""]
    if goals.height:
        rows = [[f"{g['tag']} {g['set']}", g["goal"], f"{g['value']:.2f}" if g["value"] is not None
                 else "-", f"{g['target']:.2f}", "met" if g["met"] else "MISSED"]
                for g in goals.iter_rows(named=True)]
        out.append("goals")
        out.append(text_grid(["cell", "goal", "value", "target", ""], rows))
    return "\n".join(out)
