"""What every run of the engine shares, simulated or live: its settings and
the files written at the end."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coadapt.backends.modeled.job import check_observation_noise
from coadapt.eventlog import log_in
from coadapt.metrics import job_table, summarize, tally_log
from coadapt.policies.base import PolicyConfig, PolicyOptions
from coadapt.world.cluster import ClusterSpec
from coadapt.world.world import EFFICIENCY_TRUTHS, World, check_bootstrap_error


@dataclass(frozen=True)
class RunSettings:
    cluster: ClusterSpec
    interval: float = 60.0
    restart_delay: float = 30.0
    seed: int = 0
    p: float = -1.0
    show_progress: bool = True
    start_node: bool = False  # PolicyConfig.start_node
    tiresias_threshold: float = 16 * 3600.0
    fairness: bool = True  # append the shared T_iso (runs.fairness) to the log
    observation_noise: float = 0.0  # S: modeled jobs' report error in measured spreads (0: off)
    efficiency_truth: str = "curves"  # modeled jobs' statistical efficiency: measured curves
    # where the profile has them, else the gain formula ("formula": always the formula)
    preset: str | None = None  # the named option set these settings came from (runs.options)
    bootstrap_error: float = 0.0  # E: error of Sia's bootstrap shown to policies (World.kind_speed)
    horizon: float | None = None  # simulated seconds before the engine gives up (None: its default)
    policy_args: PolicyOptions = ()  # --policy-arg, typed per policy (policies.plugins.policy_options)
    plugins: tuple[str, ...] = ()  # specs of the policies loaded from files or modules (a worker
    # loads them; policies.plugins.plugin_specs)

    def __post_init__(self) -> None:
        check_observation_noise(self.observation_noise)
        check_bootstrap_error(self.bootstrap_error)
        if self.efficiency_truth not in EFFICIENCY_TRUTHS:
            raise ValueError(f"--efficiency-truth {self.efficiency_truth!r}: expected one of "
                             f"{', '.join(EFFICIENCY_TRUTHS)}")

    def policy_config(self) -> PolicyConfig:
        return PolicyConfig(self.restart_delay, self.interval, self.p, self.start_node,
                            self.tiresias_threshold, options=self.policy_args,
                            plugins=self.plugins)

    def for_policies(self, names: Sequence[str], policy_args: Sequence[str] = ()) -> RunSettings:
        """These settings for the chosen (resolved) policies ``names``: their
        ``--policy-arg`` values typed and checked, and the specs a worker process
        must load for the plugins among them; ValueError names a bad argument."""
        from coadapt.policies.plugins import plugin_specs, policy_options

        return replace(self, policy_args=policy_options(policy_args, names),
                       plugins=plugin_specs(names))

    def describe(self) -> dict[str, Any]:
        """What goes into a log header."""
        return {"cluster": str(self.cluster), "total_slots": self.cluster.total_slots,
                "network": str(self.cluster.network), "interval": self.interval,
                "restart_delay": self.restart_delay, "seed": self.seed, "p": self.p,
                "start_node": self.start_node, "tiresias_threshold": self.tiresias_threshold,
                "observation_noise": self.observation_noise,
                "efficiency_truth": self.efficiency_truth, "preset": self.preset,
                **({"bootstrap_error": self.bootstrap_error} if self.bootstrap_error else {}),
                **({"horizon": self.horizon} if self.horizon is not None else {}),
                **({"policy_args": {n: dict(kv) for n, kv in self.policy_args}}
                   if self.policy_args else {}),
                **({"plugins": list(self.plugins)} if self.plugins else {})}

    def kind_speed(self, world: World) -> dict[str, dict[str, float]]:
        """What policies are shown of the kinds: the world's bootstrap, off by
        ``bootstrap_error`` (drawn from the run's seed) when that is set."""
        return world.kind_speed(self.bootstrap_error, self.seed)




def write_results(out_dir: Path) -> dict[str, Any]:
    """jobs.csv and summary.json from the run's event log alone (``log_in``)."""
    tally = tally_log(log_in(out_dir))  # one streamed pass, a few numbers per event
    jobs = job_table(tally)
    summary = summarize(tally, jobs)
    jobs.write_csv(out_dir / "jobs.csv")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
