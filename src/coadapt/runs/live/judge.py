"""After a live run: the prediction's error, the error at the run's measured
speed, a replay of its decisions, and the machine's drift.

Three simulations answer three questions, and each is labelled as what it is:

* ``prediction`` (written before the run, ``OUT/prediction/``): how well
  does the simulator predict a live run on this machine? The headline.
* ``sim-measured`` (``OUT/sim-measured/``): the policies decide again, at the
  step speed the run measured per job type. Removes the machine's drift.
* ``replay`` (``OUT/replay/``): the live allocations and batch changes
  replayed at the measured speed. Leaves the job model's error only.

The drift is the run's steady step over the calibrated one, per job type and
minute; it is compared with the calibration's own spread, so a prediction
missed because the machine changed under it says so.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from coadapt.eventlog import log_in
from coadapt.policies.replay import ReplayPolicy
from coadapt.report.simlive import Comparison, compare_dirs
from coadapt.report.simlive_view import format_comparison, write_outputs
from coadapt.runs.live.predict import PREDICTION_DIR
from coadapt.runs.live.speed import observed_speed, speed_by_minute
from coadapt.runs.settings import RunSettings
from coadapt.runs.simulate import simulate_policy
from coadapt.world.costs import LiveCosts
from coadapt.world.workload import Workload
from coadapt.world.world import World

log = logging.getLogger(__name__)

COMPARE_DIR = "compare"
KINDS = {
    "prediction": "PREDICTION (simulated before the run, this machine's calibration, "
                  "policies decide)",
    "sim-measured": "SIMULATED AT MEASURED SPEED (policies decide; the run's own step "
                    "speed per type: machine drift removed)",
    "replay": "REPLAY (the live decisions replayed at the measured speed: job-model "
              "error only)",
}
MIN_STEPS = 20  # steps in a minute for its drift point to count


@dataclass(frozen=True)
class Judgement:
    comparisons: dict[str, Comparison]
    drift: pl.DataFrame
    text: str


def judge(names: Sequence[str], world: World, workload: Workload, settings: RunSettings,
          out: Path) -> Judgement:
    """Compare the live run in ``out`` with its prediction, re-simulate it at
    its measured speed and replay it; write ``out/compare/<kind>/`` and
    ``out/drift.{csv,png}``; return the text to print."""
    apps = {j.name: j.application for j in workload.jobs}
    truth, costs = world.profiles, world.costs
    configs = ({a: {(p.workers, p.micro) for p in t.steps} for a, t in costs.types.items()}
               if costs is not None else None)
    speeds = {n: observed_speed(out / n, truth, apps, configs) for n in names}
    (out / "speed.json").write_text(json.dumps(speeds, indent=1) + "\n")
    drift = pl.concat([speed_by_minute(out / n, truth, apps, configs)
                       .with_columns(pl.lit(n).alias("policy")) for n in names],
                      how="vertical")
    drift.write_csv(out / "drift.csv")
    comparisons: dict[str, Comparison] = {}
    sections = []
    for kind, title in KINDS.items():
        if kind != "prediction":
            if costs is None:
                continue  # no calibration to rescale
            for n in names:
                replay = ReplayPolicy.from_log(log_in(out / n)) if kind == "replay" \
                    else None
                at_speed = world.with_costs(costs.scaled(speeds[n], colocation=False))
                simulate_policy(at_speed, workload, n, settings, out / kind / n,
                                replay=replay, kind=kind)
        sim_root = out / (PREDICTION_DIR if kind == "prediction" else kind)
        result = compare_dirs(sim_root, out)
        write_outputs(result, out / COMPARE_DIR / kind)
        comparisons[kind] = result
        sections.append(f"{title}\n{format_comparison(result)}")
    sections.append(format_drift(drift, costs))
    try:
        plot_drift(drift, out / "drift.png")
    except ImportError as exc:
        log.warning("drift plot skipped: %s", exc)
    return Judgement(comparisons, drift, "\n\n".join(sections))


def calibration_spread(costs: LiveCosts | None, app: str) -> float | None:
    """Relative half-width of the calibration's compute factor for ``app``
    (what its repeats disagreed by), if it recorded one."""
    if costs is None or app not in costs.types:
        return None
    spread = getattr(costs.types[app], "compute_spread", None)
    return float(spread) if spread is not None else None


def format_drift(drift: pl.DataFrame, costs: LiveCosts | None) -> str:
    """Per policy and type: the run's speed range over its minutes against the
    calibration (1.00 = as calibrated), and whether it left the calibration's spread."""
    lines = ["DRIFT: steady step / calibrated step, per minute of the run "
             f"(minutes with >= {MIN_STEPS} steps)"]
    kept = drift.filter(pl.col("steps") >= MIN_STEPS)
    if kept.height == 0:
        return lines[0] + "\n  (no steady steps at the calibrated configurations)"
    for (policy, app), g in kept.group_by("policy", "type", maintain_order=True):
        s = g["speed"]
        spread = calibration_spread(costs, app)
        worst = float((s - 1.0).abs().max())
        beyond = "" if spread is None else (
            f"; worst minute {worst:.1%} off: BEYOND the calibration's +-{spread:.1%}"
            if worst > spread else f"; every minute within the calibration's +-{spread:.1%}")
        lines.append(f"  {policy:>8} {app:18s} median {s.median():.3f}, "
                     f"range {s.min():.3f}-{s.max():.3f} over {g.height} min{beyond}")
    return "\n".join(lines)


def plot_drift(drift: pl.DataFrame, path: Path) -> Path | None:
    """Speed relative to the calibration per minute, one line per type, a panel per policy."""
    kept = drift.filter(pl.col("steps") >= MIN_STEPS)
    if kept.height == 0:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")
    g = sns.relplot(data={c: kept[c].to_numpy() for c in kept.columns},
                    x="minute", y="speed", hue="type", col="policy", kind="line", marker="o",
                    height=3.2, aspect=1.2)
    for ax in g.axes.flat:
        ax.axhline(1.0, color="grey", ls="--", lw=0.9)
    g.set_axis_labels("minute of the run", "step / calibrated step")
    g.figure.savefig(path, dpi=120)
    plt.close(g.figure)
    return path
