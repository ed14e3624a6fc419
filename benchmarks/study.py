"""Figures and tables of the objective and sensitivity studies (all SIMULATED).

Reads finished ``coadapt experiment`` folders; runs nothing itself:

    python benchmarks/study.py pareto out/pareto
        mean JCT against p99 and max rho (one shared yardstick) per policy and
        contended set, 95% bootstrap CIs over seeds; which objectives are
        dominated, and by whom. Writes pareto.csv and pareto.png into the folder.
    python benchmarks/study.py priority out/priority cpu-priority cpu-load8
        the weighted jobs of the first set against the same jobs (same names,
        seed, arrivals and requests) in the second, unweighted set, per
        policy: their mean JCT and rho, and the rest's; paired by seed.
    python benchmarks/study.py sweep "restart delay (x measured)" out/sens-restart/x*
        one experiment per knob value (the number in each folder's name is the
        value): mean JCT ratio to fixed per policy (geometric mean over seeds,
        paired, CI) against the knob. Writes sweep.csv and sweep.png into the
        folders' parent (with --column: the knob's values are a summary column,
        e.g. bandwidth, of one experiment; its files go into that folder's parent).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import seaborn as sns  # noqa: E402

from coadapt.eventlog.log import read_events  # noqa: E402
from coadapt.experiment.stats import bootstrap_ci, ordered_policies  # noqa: E402
from coadapt.metrics import job_table  # noqa: E402

SIM = "SIMULATED"


def pareto_table(results: pl.DataFrame) -> pl.DataFrame:
    """Per (set, policy): mean over seeds of avg JCT, p99 rho and max rho, with CIs."""
    rows = []
    for (wset, policy), part in results.group_by(["set", "policy"], maintain_order=True):
        row = {"set": wset, "policy": policy, "seeds": part.height}
        for col in ("avg_jct", "p99_rho", "max_rho"):
            m, lo, hi = bootstrap_ci(part[col].cast(pl.Float64).to_numpy())
            row |= {col: m, f"{col}_lo": lo, f"{col}_hi": hi}
        rows.append(row)
    table = pl.DataFrame(rows)
    dominated = []
    for r in table.iter_rows(named=True):
        peers = table.filter(pl.col("set") == r["set"])
        by = [p["policy"] for p in peers.iter_rows(named=True)
              if p["avg_jct"] <= r["avg_jct"] and p["p99_rho"] <= r["p99_rho"]
              and (p["avg_jct"] < r["avg_jct"] or p["p99_rho"] < r["p99_rho"])]
        dominated.append(",".join(ordered_policies(by)))
    return table.with_columns(pl.Series("dominated_by", dominated))


def pareto(folder: Path, off_chart: set[str]) -> int:
    results = pl.read_csv(folder / "results.csv")
    table = pareto_table(results)
    table.write_csv(folder / "pareto.csv")
    sets = list(dict.fromkeys(table["set"].to_list()))
    policies = ordered_policies(set(table["policy"].to_list()) - off_chart)
    colors = dict(zip(policies, sns.color_palette("colorblind", len(policies)), strict=False))
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(2, len(sets), figsize=(4.6 * len(sets), 7.2), squeeze=False)
    for j, wset in enumerate(sets):
        part = table.filter((pl.col("set") == wset) & pl.col("policy").is_in(policies))
        for i, rho in enumerate(("p99_rho", "max_rho")):
            ax = axes[i][j]
            for r in part.iter_rows(named=True):
                ax.errorbar(r[rho], r["avg_jct"] / 60,
                            xerr=[[r[rho] - r[f"{rho}_lo"]], [r[f"{rho}_hi"] - r[rho]]],
                            yerr=[[(r["avg_jct"] - r["avg_jct_lo"]) / 60],
                                  [(r["avg_jct_hi"] - r["avg_jct"]) / 60]],
                            fmt="*" if r["policy"] == "pollux-fair" else "o",
                            markersize=11 if r["policy"] == "pollux-fair" else 6,
                            color=colors[r["policy"]], capsize=2, label=r["policy"])
            ax.set_title(f"{wset}", fontsize=9)
            ax.set_xlabel(f"{rho.replace('_', ' ')} (shared T_iso)")
            ax.set_ylabel("mean JCT (min)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 8), fontsize=8)
    left_out = f"; off the chart (see pareto.csv): {', '.join(sorted(off_chart))}" \
        if off_chart else ""
    fig.suptitle(f"{SIM}: mean JCT vs finish-time fairness per objective "
                 f"(95% CI over seeds; lower-left is better{left_out})", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    fig.savefig(folder / "pareto.png", dpi=110)
    out = sys.stdout
    out.write(f"{SIM}: mean JCT (min) and rho per objective [95% CI]\n")
    for r in table.iter_rows(named=True):
        out.write(f"{r['set']:10s} {r['policy']:14s} JCT {r['avg_jct'] / 60:5.2f} "
                  f"[{r['avg_jct_lo'] / 60:.2f}, {r['avg_jct_hi'] / 60:.2f}]  p99 rho "
                  f"{r['p99_rho']:.2f} [{r['p99_rho_lo']:.2f}, {r['p99_rho_hi']:.2f}]  max rho "
                  f"{r['max_rho']:.2f}  dominated by: {r['dominated_by'] or '-'}\n")
    out.write(f"wrote {folder / 'pareto.csv'} and {folder / 'pareto.png'}\n")
    return 0


def _jobs(folder: Path, row: dict) -> pl.DataFrame:
    return job_table(list(read_events(folder / row["log"])))


def priority(folder: Path, weighted: str, control: str) -> int:
    """Weighted jobs vs the same jobs unweighted, and vs the rest, per policy."""
    results = pl.read_csv(folder / "results.csv")
    rows = []
    for policy in ordered_policies(set(results["policy"].to_list())):
        per_seed = []
        for r in results.filter((pl.col("set") == weighted) & (pl.col("policy") == policy)
                                ).iter_rows(named=True):
            ctrl = results.filter((pl.col("set") == control) & (pl.col("policy") == policy)
                                  & (pl.col("seed") == r["seed"]))
            if ctrl.height != 1:
                continue
            w, c = _jobs(folder, r), _jobs(folder, ctrl.row(0, named=True))
            vip = set(w.filter(pl.col("weight") > 1)["job"].to_list())
            same = c.filter(pl.col("job").is_in(vip))
            if same.height != len(vip):
                raise SystemExit(f"{control} seed {r['seed']}: not the same jobs as {weighted}")
            per_seed.append({
                "vip_jct": w.filter(pl.col("job").is_in(vip))["jct"].mean(),
                "vip_jct_unweighted": same["jct"].mean(),
                "rest_jct": w.filter(~pl.col("job").is_in(vip))["jct"].mean(),
                "rest_jct_unweighted": c.filter(~pl.col("job").is_in(vip))["jct"].mean(),
                "vip_rho": w.filter(pl.col("job").is_in(vip))["rho"].mean(),
                "rest_rho": w.filter(~pl.col("job").is_in(vip))["rho"].mean()})
        if not per_seed:
            continue
        t = pl.DataFrame(per_seed)
        row = {"policy": policy, "seeds": t.height}
        for col in t.columns:
            m, lo, hi = bootstrap_ci(t[col].to_numpy())
            row |= {col: m, f"{col}_lo": lo, f"{col}_hi": hi}
        for name, num, den in (("vip_gain", "vip_jct", "vip_jct_unweighted"),
                               ("rest_cost", "rest_jct", "rest_jct_unweighted")):
            logs = np.log(t[num].to_numpy() / t[den].to_numpy())
            m, lo, hi = np.exp(bootstrap_ci(logs))
            row |= {name: m, f"{name}_lo": lo, f"{name}_hi": hi}
        rows.append(row)
    table = pl.DataFrame(rows)
    table.write_csv(folder / "priority.csv")
    out = sys.stdout
    out.write(f"{SIM}: {weighted} (weights) vs the same jobs in {control} (none); JCT in min, "
              "ratios geometric over seeds [95% CI]\n")
    for r in table.iter_rows(named=True):
        out.write(f"{r['policy']:12s} weighted jobs {r['vip_jct'] / 60:5.2f} (unweighted "
                  f"{r['vip_jct_unweighted'] / 60:5.2f}; x{r['vip_gain']:.2f} "
                  f"[{r['vip_gain_lo']:.2f}, {r['vip_gain_hi']:.2f}])  rest "
                  f"{r['rest_jct'] / 60:5.2f} (x{r['rest_cost']:.2f} [{r['rest_cost_lo']:.2f}, "
                  f"{r['rest_cost_hi']:.2f}])  rho weighted {r['vip_rho']:.2f} rest "
                  f"{r['rest_rho']:.2f}\n")
    out.write(f"wrote {folder / 'priority.csv'}\n")
    return 0


def _value(folder: Path) -> float:
    found = re.findall(r"[-+]?\d+(?:\.\d+)?", folder.name)
    if not found:
        raise SystemExit(f"{folder}: no knob value in the folder name (e.g. x0.5, s3)")
    return float(found[-1])


def sweep(knob: str, folders: list[Path], column: str | None = None) -> int:
    parts = []
    for folder in folders:
        summary = pl.read_csv(folder / "summary.csv")
        value = pl.col(column).cast(pl.Float64) if column else pl.lit(_value(folder))
        parts.append(summary.with_columns(value.alias("value"))
                     .select("set", "policy", "value", "avg_jct", "avg_jct_lo", "avg_jct_hi",
                             "vs_fixed", "vs_fixed_lo", "vs_fixed_hi", "p99_rho", "max_rho"))
    table = pl.concat(parts).sort("set", "policy", "value")
    parent = folders[0].parent
    table.write_csv(parent / "sweep.csv")
    sets = list(dict.fromkeys(table["set"].to_list()))
    policies = ordered_policies(set(table["policy"].to_list()) - {"fixed"})
    colors = dict(zip(policies, sns.color_palette("colorblind", len(policies)), strict=False))
    sns.set_theme(style="whitegrid", context="paper")
    ncols = min(len(sets), 4)
    nrows = -(-len(sets) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(7.5, 5.0 * ncols), 4.0 * nrows),
                             squeeze=False)
    for ax in list(axes.flat)[len(sets):]:
        ax.set_visible(False)
    for ax, wset in zip(axes.flat, sets, strict=False):
        for policy in policies:
            part = table.filter((pl.col("set") == wset) & (pl.col("policy") == policy))
            x, y = part["value"].to_numpy(), part["vs_fixed"].to_numpy()
            ax.errorbar(x, y, yerr=[y - part["vs_fixed_lo"].to_numpy(),
                                    part["vs_fixed_hi"].to_numpy() - y],
                        marker="o", capsize=2, color=colors[policy], label=policy)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        if table["value"].min() > 0 and table["value"].max() / table["value"].min() > 8:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(knob)
        ax.set_ylabel("mean JCT / fixed (paired, geo. mean)")
        ax.set_title(wset, fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"{SIM}: sensitivity to {knob} (95% CI over seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(parent / "sweep.png", dpi=110)
    sys.stdout.write(f"{SIM}: mean JCT (min) and ratio to fixed against {knob}\n")
    for r in table.iter_rows(named=True):
        sys.stdout.write(f"{r['set']:10s} {r['policy']:10s} {knob} {r['value']:g}: JCT "
                         f"{r['avg_jct'] / 60:5.2f}  / fixed {r['vs_fixed']:.2f} "
                         f"[{r['vs_fixed_lo']:.2f}, {r['vs_fixed_hi']:.2f}]  p99 rho "
                         f"{r['p99_rho']:.2f}\n")
    sys.stdout.write(f"wrote {parent / 'sweep.csv'} and {parent / 'sweep.png'}\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pareto", help="JCT vs rho per objective")
    p.add_argument("folder", type=Path)
    p.add_argument("--off-chart", default="fixed",
                   help="comma list of policies left out of the figure (they stretch its "
                        "axes; still in the table); default fixed")
    q = sub.add_parser("priority", help="weighted jobs vs the same jobs unweighted")
    q.add_argument("folder", type=Path)
    q.add_argument("weighted", help="the set with weights (e.g. cpu-priority)")
    q.add_argument("control", help="the same set without them (e.g. cpu-load8)")
    s = sub.add_parser("sweep", help="JCT ratio to fixed against one knob")
    s.add_argument("knob", help="the knob's label for the axis")
    s.add_argument("folders", nargs="+", type=Path)
    s.add_argument("--column", help="take the knob's value from this summary column (e.g. "
                                    "bandwidth, for one experiment run with several) instead "
                                    "of the folder names")
    args = ap.parse_args()
    if args.cmd == "priority":
        return priority(args.folder, args.weighted, args.control)
    if args.cmd == "pareto":
        return pareto(args.folder, {n for n in args.off_chart.split(",") if n})
    return sweep(args.knob, args.folders, args.column)


if __name__ == "__main__":
    sys.exit(main())
