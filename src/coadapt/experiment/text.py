"""The study's summary as plain text for the terminal (the report has the rest)."""

from __future__ import annotations

import polars as pl

from coadapt.experiment.stats import ordered_policies


def _minutes(v: float | None) -> str:
    return "-" if v is None else f"{v / 60:.2f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def text_grid(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                       for i, (h, w) in enumerate(zip(header, widths, strict=True)))]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                               for i, (v, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(lines)


def format_summary(summary: pl.DataFrame, goals: pl.DataFrame) -> str:
    """Per network: mean JCT in minutes [95% CI] per set and policy, and
    pollux's paired ratios; then the goals."""
    out = []
    policies = ordered_policies(summary["policy"].to_list())
    for tag in summary["tag"].unique(maintain_order=True):
        part = summary.filter(pl.col("tag") == tag)
        rows = []
        for (name,), grp in part.group_by("set", maintain_order=True):
            by = {r["policy"]: r for r in grp.iter_rows(named=True)}
            first = next(iter(by.values()))
            line = [f"{name} ({first['load']:.3g}x)"]
            for p in policies:
                r = by.get(p)
                line.append("-" if r is None else
                            f"{_minutes(r['avg_jct'])} [{_minutes(r['avg_jct_lo'])}, "
                            f"{_minutes(r['avg_jct_hi'])}]")
            px = by.get("pollux")
            line += [_ratio(px["vs_fixed"]) if px else "-", _ratio(px["vs_dynamic"]) if px else "-"]
            dyn = by.get("dynamic")
            line.append(f"{_ratio(px['max_rho']) if px else '-'} / "
                        f"{_ratio(dyn['max_rho']) if dyn else '-'}")
            rows.append(line)
        out.append(f"SIMULATED, network {tag}: mean JCT in minutes [95% CI over seeds]")
        out.append(text_grid(["set (load)", *policies, "pollux/fixed", "pollux/dynamic",
                              "max rho pollux/dynamic"], rows))
        out.append("")
    if goals.height:
        rows = [[f"{g['tag']} {g['set']}", g["goal"], f"{g['value']:.2f}" if g["value"] is not None
                 else "-", f"{g['target']:.2f}", "met" if g["met"] else "MISSED"]
                for g in goals.iter_rows(named=True)]
        out.append("goals")
        out.append(text_grid(["cell", "goal", "value", "target", ""], rows))
    return "\n".join(out)
