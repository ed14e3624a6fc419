"""Two small figures per profile, so a reader can eyeball a measurement at once.

``throughput.png``: samples/s against per-worker batch, one line per worker
count, with the p25-p75 band of the step time. ``efficiency.png``: the
gradient noise scale phi along training (left) and the metric against samples
(right), one line per total batch size. Plain matplotlib on polars columns
(seaborn only for palettes), so no pandas/pyarrow is needed; files are tens of KB.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl


def _plt():  # noqa: ANN202 - matplotlib has no cheap type to name here
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_throughput(summary: pl.DataFrame, path: Path, title: str) -> Path:
    """Samples/s vs local batch for each worker count (median, IQR band)."""
    import seaborn as sns

    plt = _plt()
    df = summary.with_columns(
        (pl.col("workers") * pl.col("local_bsz") / pl.col("step_time")).alias("samples/s"),
        (pl.col("workers") * pl.col("local_bsz") / pl.col("step_time_p75")).alias("lo"),
        (pl.col("workers") * pl.col("local_bsz") / pl.col("step_time_p25")).alias("hi"),
    ).sort("workers", "local_bsz")
    fig, ax = plt.subplots(figsize=(5, 3.4))
    palette = sns.color_palette("deep", df["workers"].n_unique())
    for color, ((k,), g) in zip(palette, df.group_by("workers", maintain_order=True),
                                strict=False):
        ax.plot(g["local_bsz"], g["samples/s"], marker="o", color=color, label=f"{k} worker(s)")
        ax.fill_between(g["local_bsz"], g["lo"], g["hi"], color=color, alpha=0.25)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="per-worker batch m", ylabel="samples / s", title=title)
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_efficiency(curves: pl.DataFrame, init_batch_size: int, path: Path,
                    title: str, target: float | None = None) -> Path:
    """phi along progress and metric against samples, one line per (batch size, seed)."""
    import seaborn as sns

    plt = _plt()
    df = curves.with_columns(
        (init_batch_size * pl.col("grad_var") / pl.col("grad_sqr")).alias("phi"))
    sizes = sorted(df["batch_size"].unique().to_list())
    palette = dict(zip(sizes, sns.color_palette("viridis", len(sizes)), strict=True))
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for (bsz, seed), g in df.sort("iteration").group_by("batch_size", "seed",
                                                          maintain_order=True):
        label = f"M={bsz}" if seed == df["seed"].min() else None
        style = "-" if seed == df["seed"].min() else ":"
        axes[0].plot(g["progress"], g["phi"], style, color=palette[bsz], label=label)
        axes[1].plot(g["samples"], g["metric"], style, color=palette[bsz], label=label)
    axes[0].set(yscale="log", xlabel="progress (iterations at M0)", ylabel="phi = M0 var/sqr")
    if target is not None:
        axes[1].axhline(target, color="grey", linestyle="--", linewidth=1, label="target")
    axes[1].set(xscale="log", xlabel="samples", ylabel="validation metric")
    axes[0].legend(frameon=False, fontsize=7)
    fig.suptitle(f"{title} (dotted: other seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
