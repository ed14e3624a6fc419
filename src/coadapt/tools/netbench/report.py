"""What ``coadapt netbench`` shows: measured vs declared vs fitted per point
(a table), and one figure of all-reduce time against size per bandwidth."""

from __future__ import annotations

from pathlib import Path

import polars as pl


def summary_table(table: pl.DataFrame) -> pl.DataFrame:
    """The job types' gradient sizes only, one row per (link, K, type), in ms."""
    ms = [pl.col(c) * 1e3 for c in ("median_s", "declared_s", "fit_s")]
    return (table.filter(pl.col("size").str.contains("-"))
            .select("link", "k", "size", ms[0].alias("measured_ms"), ms[1].alias("declared_ms"),
                    "declared_err", ms[2].alias("fit_ms"), "fit_err", "cpu_util", "cpu_bound")
            .sort("link", "size", "k"))


def text_table(df: pl.DataFrame) -> str:
    head = (f"{'link':9s} {'K':>2s} {'size':17s} {'measured':>9s} {'declared':>9s} {'err':>7s} "
            f"{'fit':>9s} {'err':>7s} {'cpu':>5s}   (ms; cpu: CPU-s per core-s)")
    lines = [head]

    def num(v: float | None, fmt: str) -> str:
        return "–" if v is None else format(v, fmt)

    for r in df.iter_rows(named=True):
        lines.append(
            f"{r['link']:9s} {r['k']:2d} {r['size']:17s} {num(r['measured_ms'], '9.1f')} "
            f"{num(r['declared_ms'], '9.1f')} {num(r['declared_err'], '+7.1%')} "
            f"{num(r['fit_ms'], '9.1f')} {num(r['fit_err'], '+7.1%')} {r['cpu_util']:5.2f}"
            + ("  CPU-bound, not in the fit" if r["cpu_bound"] else ""))
    return "\n".join(lines)


def plot(table: pl.DataFrame, path: Path) -> Path:
    """All-reduce time vs bytes per link, measured (dots; hollow: CPU-bound),
    declared formula (dashed) and fit (solid), one colour per K."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    links = table["link"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(1, len(links), figsize=(4.2 * len(links), 3.4), squeeze=False)
    ks = sorted(table["k"].unique().to_list())
    palette = dict(zip(ks, sns.color_palette("viridis", len(ks)), strict=True))
    for ax, link in zip(axes[0], links, strict=True):
        g = table.filter(pl.col("link") == link).sort("bytes")
        for (k,), gk in g.group_by("k", maintain_order=True):
            c = palette[k]
            bound = gk["cpu_bound"].to_list()
            x, y = gk["bytes"].to_numpy() / 2**20, gk["median_s"].to_numpy() * 1e3
            ax.scatter(x, y, s=18, facecolors=[c if not b else "none" for b in bound],
                       edgecolors=[c] * len(x), label=f"K={k}")
            if gk["declared_s"].null_count() == 0:
                ax.plot(x, gk["declared_s"].to_numpy() * 1e3, ls="--", color=c, lw=0.8)
            if gk["fit_s"].null_count() == 0:
                ax.plot(x, gk["fit_s"].to_numpy() * 1e3, color=c, lw=1)
        ax.set(xscale="log", yscale="log", xlabel="all-reduce size (MiB)", ylabel="ms",
               title=f"{link}: dots measured, -- declared, — fit")
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
