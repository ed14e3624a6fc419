"""One plotting style for every report's figures (a run's, an experiment's).

Seaborn's whitegrid "paper" theme, the colorblind palette in the table's
policy order (so a policy has one colour in every figure of a report), small
multiples on a grid, and a placeholder figure that says what is missing
instead of failing, so a report's links stay valid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

DPI = 110


def prepare(figdir: Path) -> Path:
    """Create ``figdir`` and set the style; returns ``figdir``."""
    figdir.mkdir(parents=True, exist_ok=True)
    sns.set_theme(style="whitegrid", context="paper")
    return figdir


def palette(policies: Sequence[str]) -> dict[str, Any]:
    """One colour per policy, in the order given (the table's)."""
    return dict(zip(policies, sns.color_palette("colorblind", n_colors=max(len(policies), 1)),
                    strict=False))


def grid(n: int, width: float = 5.0, height: float = 3.6, ncols_max: int = 3, **kw: Any):
    """A figure of ``n`` panels, at most ``ncols_max`` per row; the unused
    cells are hidden. Returns (figure, the n axes)."""
    ncols = max(1, min(n, ncols_max))
    nrows = max(1, math.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             squeeze=False, **kw)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.axis("off")
    return fig, flat[:max(n, 1)]


def save(fig: plt.Figure, path: Path, title: str) -> Path:
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def placeholder(path: Path, title: str, message: str) -> Path:
    """A figure that says what is missing."""
    fig, ax = plt.subplots(figsize=(6, 2.5))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return save(fig, path, title)


def time_unit(span_s: float) -> tuple[str, float]:
    """Minutes for CPU-sized runs, hours past 6 h."""
    return ("h", 3600.0) if span_s > 6 * 3600 else ("min", 60.0)


def plain_log_ticks(axis: Any) -> None:
    """Plain numbers (not 10^x) on a log axis, minor ticks labelled small."""
    fmt = FuncFormatter(lambda v, _pos: f"{v:g}")
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(fmt)
    axis.set_tick_params(which="minor", labelsize=6)
