"""The scheduling options every command that runs the engine shares.

One set of CPU defaults for ``simulate``, ``live`` and ``experiment``: 2-slot
nodes like the profiled machine with a 10 Gbit/s network between them,
15-s rounds, the restart delay that ``coadapt calibrate`` measured, new jobs
starting on up to one node, and a Tiresias threshold scaled to the workload.
The Pollux study's settings are one preset, ``--preset osdi21`` (``--new-jobs one
--tiresias-threshold 57600 --interval 60 --restart-delay 30``; the cluster stays
an option: the study's is ``--cluster 16x4``). A flag given on the command line
wins over the preset, in either order: every option the preset sets defaults to
a marked value (see :func:`given`), so the preset knows what was typed.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from coadapt.runs.settings import EFFICIENCY_TRUTHS, RunSettings, check_observation_noise
from coadapt.world.cluster import ClusterSpec, Network
from coadapt.world.costs import CALIBRATIONS_DIR, LiveCosts, machine_fingerprint
from coadapt.world.kinds import KIND_SPEEDS_FILE, KindSpeeds, load_kind_speeds
from coadapt.world.profiles.network import load_network_calibration, network_for
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.profiles.sia import SOSP23_CLUSTER
from coadapt.world.study import STUDIES
from coadapt.world.workload import Workload
from coadapt.world.world import PLAIN_KINDS, World

FALLBACK_RESTART = 5.0  # only without measured costs; the measured median is ~3 s here

# The Pollux study (OSDI '21, and its reference simulator): new jobs start on one
# slot, Tiresias demotes after 16 slot-hours, 60-s rounds, a 30-s restart.
PRESETS: dict[str, dict[str, Any]] = {
    "osdi21": {"new_jobs": "one", "tiresias_threshold": str(16 * 3600), "interval": 60.0,
               "restart_delay": 30.0},
    # The Sia study (SOSP '23): its 64-GPU cluster of three GPU types, 60-s rounds,
    # per-model step calibration, restart times and penalties (``world.study``).
    "sosp23": {"cluster": SOSP23_CLUSTER, "new_jobs": "one",
               "tiresias_threshold": str(16 * 3600), "interval": 60.0, "restart_delay": 30.0,
               "study": "sosp23"},
}


class _UnsetFloat(float):
    """A float default the user did not type (a typed value is a plain float)."""


class _UnsetStr(str):
    """A string default the user did not type."""


def given(value: object) -> bool:
    """Was ``value`` typed on the command line (or set by a preset), not a default?
    None is the restart delay's default ('the measured one'); no flag types it."""
    return value is not None and not isinstance(value, (_UnsetFloat, _UnsetStr))


class _PresetAction(argparse.Action):
    """Fill in the preset's options that are still at their defaults; a flag
    typed before ``--preset`` is kept, one typed after overrides the preset."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        for key, value in PRESETS[values].items():
            if not given(getattr(namespace, key, None)):
                setattr(namespace, key, value)


def apply_preset(args: argparse.Namespace) -> argparse.Namespace:
    """A namespace whose preset options are filled in where not given; for
    namespaces built without the parser
    (``argparse.Namespace(**spec)``), where :class:`_PresetAction` never ran."""
    values = dict(vars(args))
    preset = values.get("preset")
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"--preset {preset!r}: expected one of {', '.join(PRESETS)}")
        for key, value in PRESETS[preset].items():
            if key not in values or not given(getattr(args, key)):
                values[key] = value
    return argparse.Namespace(**values)


def _bandwidths(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected Gbit/s numbers like 1,10,100, got {text!r}") from None


def add_options(p: argparse.ArgumentParser, cluster: str = "8x2", *,
                multi_bandwidth: bool = False, seed: bool = True) -> None:
    """The engine options; ``multi_bandwidth`` takes a comma list of networks
    (the experiment runs each), ``seed=False`` leaves seeds to the caller."""
    p.add_argument("--cluster", default=_UnsetStr(cluster),
                   help=f"NODESxSLOTS (e.g. 8x2) or slots per node (4,4,2), each group "
                   "optionally :KIND, e.g. 4x2:native,4x2:legacy (kinds: coadapt/world/"
                   f"kinds.toml, or GPU types of sia: profiles) (default {cluster})")
    if multi_bandwidth:
        p.add_argument("--bandwidth", type=_bandwidths, default=[10.0], metavar="GBIT_S[,...]",
                       help="networks between nodes to run, for all-reduce across nodes of CPU "
                       "profiles, e.g. 1,10,100 (default 10)")
    else:
        p.add_argument("--bandwidth", type=float, default=10.0, metavar="GBIT_S",
                       help="network between nodes, for all-reduce across nodes of CPU profiles "
                       "(default 10)")
    p.add_argument("--latency", type=float, default=50.0, metavar="US",
                   help="per-hop network latency in microseconds (default 50)")
    p.add_argument("--net-calibration", default=None, metavar="FILE",
                   help="a network calibration ('coadapt netbench' writes OUT/network.json): "
                   "the simulator's truth then charges the all-reduce measured between "
                   "emulated nodes at each --bandwidth (fitted overhead, latency and achieved "
                   "bandwidth) instead of the declared ring formula (default: declared)")
    p.add_argument("--preset", choices=sorted(PRESETS), default=None, action=_PresetAction,
                   help="a study's options: 'osdi21' is the Pollux study's (--new-jobs one "
                   "--tiresias-threshold 57600 --interval 60 --restart-delay 30); 'sosp23' the "
                   f"Sia study's (--cluster {SOSP23_CLUSTER} --interval 60 --new-jobs one, "
                   "and its per-model step calibration, restart times and penalties; use with "
                   "--profiles sia:DIR); flags given as well win over it")
    p.add_argument("--interval", type=float, default=_UnsetFloat(15.0),
                   help="scheduling round length in seconds (default 15)")
    p.add_argument("--restart-delay", type=float, default=None,
                   help="restart delay the policies assume (and that jobs pay without measured "
                   f"costs); default: the median measured restart, else {FALLBACK_RESTART:g} s")
    p.add_argument("--new-jobs", choices=("node", "one"), default=_UnsetStr("node"),
                   help="a job that never ran may start on up to one node (or its request): "
                   "'node' (default), or on one slot as in the Pollux study: 'one'")
    p.add_argument("--tiresias-threshold", default=_UnsetStr("auto"), metavar="auto|SLOT_SECONDS",
                   help="Tiresias's queue threshold; 'auto' (default): the median job's "
                   "service at its request, estimated from the profiles")
    p.add_argument("--p", type=float, default=-1.0, dest="power",
                   help="Pollux power-mean exponent over speedups (default -1)")
    p.add_argument("--observation-noise", type=float, default=0.0, metavar="S",
                   help="profile error, simulation only: multiply what each modeled job reports "
                   "to the scheduler (step and sync time, gradient noise scale) by "
                   "exp(S*cv*z), z ~ N(0,1), cv the spread its profile measured between "
                   "repeats and seeds; the simulated truth and the fairness yardstick stay "
                   "exact; draws follow the run's seed and the job name. 0 (default) is off; "
                   "live runs report real measurements and refuse it")
    p.add_argument("--efficiency-truth", choices=EFFICIENCY_TRUTHS, default="curves",
                   help="the simulator's truth for statistical efficiency: 'curves' (default), "
                   "the measured training curves where the profile has them (samples to target "
                   "per batch size), else the gain formula; 'formula', Pollux's gain formula "
                   "always (the policies' own model). Simulation only: a live run's jobs train "
                   "for real, but its prediction is simulated with it")
    p.add_argument("--kinds", default=None, metavar="FILE",
                   help="a TOML file of more node kinds ([kind.NAME] tables with isa, aten, "
                   "cpu_quota; as coadapt/world/kinds.toml), for --cluster groups like 2x2:NAME")
    p.add_argument("--kind-speeds", default="auto", metavar="auto|none|FILE",
                   help="how fast each job type runs on each CPU kind of node, as 'coadapt "
                   "calibrate --quick --cluster ...' measured it; 'auto' (default): this "
                   f"machine's newest in {CALIBRATIONS_DIR}/, else the profile folder's "
                   f"{KIND_SPEEDS_FILE}; read only when --cluster names a kind other than "
                   "native (GPU kinds come with their profiles)")
    p.add_argument("--bootstrap-error", type=float, default=0.0, metavar="E",
                   help="a sensitivity of kind-aware policies (sia, gavel): multiply each job "
                   "type's one-worker speed per kind that they are shown (Sia's bootstrap) by "
                   "exp(E*z), z ~ N(0,1) per type and kind, drawn from the run's seed; the "
                   "truth stays exact. 0 (default): the bootstrap as measured")
    if seed:
        p.add_argument("--seed", type=int, default=0, help="random seed, recorded in the log")


def network(args: argparse.Namespace, bandwidth: float | None = None) -> Network:
    """The network of a run: the declared one at ``bandwidth`` (default
    ``args.bandwidth``), or the measured one where ``--net-calibration`` is
    given (NetworkCalibrationError, a ValueError, names a bad file)."""
    path = getattr(args, "net_calibration", None)  # older run specs lack it
    cal = load_network_calibration(path) if path else None
    return network_for(args.bandwidth if bandwidth is None else bandwidth, args.latency, cal)


def cluster_of(args: argparse.Namespace) -> ClusterSpec:
    """The run's cluster from ``--cluster`` and the network options (a preset
    filled in); ValueError names a bad one. Checked before anything is measured."""
    return ClusterSpec.parse(apply_preset(args).cluster, network(args))


def kind_speeds_of(args: argparse.Namespace, cluster: ClusterSpec,
                   profiles: Mapping[str, AppProfile]) -> KindSpeeds | None:
    """The measured speeds of the CPU kinds ``--cluster`` names (``--kind-speeds``);
    None when it names none (plain nodes, or GPU types the profiles measured)."""
    spec = getattr(args, "kind_speeds", None) or "auto"  # older run specs lack it
    cpu_kinds = [k for k in cluster.kinds if k not in PLAIN_KINDS
                 and not all(k in p.by_kind for p in profiles.values())]
    if spec == "none" or (spec == "auto" and not cpu_kinds):
        return None
    if spec != "auto":
        return load_kind_speeds(spec)
    mine = CALIBRATIONS_DIR / f"{machine_fingerprint()['id']}-kinds.json"
    if mine.is_file():
        return load_kind_speeds(mine)
    folder = str(getattr(args, "profiles", "") or "")
    shipped = Path(folder.partition(":")[2] if ":" in folder else folder) / KIND_SPEEDS_FILE
    return load_kind_speeds(shipped) if shipped.is_file() else None


def world_of(args: argparse.Namespace, profiles: Mapping[str, AppProfile],
             costs: LiveCosts | None, apps: Iterable[str] = ()) -> World:
    """The run's world: ``--cluster`` and the network, the profiles, the machine
    calibration, the kinds' measured speeds and ``--efficiency-truth`` (built once
    per run; see ``world.world``)."""
    cluster = cluster_of(args)
    study = STUDIES.get(getattr(apply_preset(args), "study", None) or "")
    return World.build(profiles, cluster, costs=costs, apps=apps,
                       efficiency_truth=getattr(args, "efficiency_truth", None) or "curves",
                       kind_speeds=kind_speeds_of(args, cluster, profiles), study=study)


def tiresias_threshold(world: World, workload: Workload) -> float:
    """The median job's service (slot-seconds at its request, priced at the
    simulator's truth on the world's cluster): as Tiresias tunes its thresholds
    to the job-size distribution, 16 GPU-hours for Philly's jobs would never
    demote a minute-long CPU job."""
    return statistics.median(j.num_replicas * world.estimated_jct(j.application, j.num_replicas,
                                                                  j.batch_size)
                             for j in workload.jobs)


def settings(args: argparse.Namespace, world: World, workload: Workload,
             show_progress: bool = True) -> RunSettings:
    """RunSettings from the options (a preset filled in) in ``world``; ValueError
    names the bad one."""
    args = apply_preset(args)
    if args.interval <= 0:
        raise ValueError("--interval must be > 0 seconds")
    delay = args.restart_delay
    costs = world.costs
    if delay is None:
        delay = costs.policy_restart_delay() if costs is not None else FALLBACK_RESTART
    if delay < 0:
        raise ValueError("--restart-delay must be >= 0 seconds")
    if args.tiresias_threshold == "auto" and not world.truths:
        threshold = 16 * 3600.0  # nothing to scale it by: the Pollux study's
    elif args.tiresias_threshold == "auto":  # priced at the truth the jobs will run at
        threshold = tiresias_threshold(world, workload)
    else:
        try:
            threshold = float(args.tiresias_threshold)
        except ValueError:
            raise ValueError(f"--tiresias-threshold {args.tiresias_threshold!r}: expected "
                             "'auto' or slot-seconds") from None
    noise = check_observation_noise(getattr(args, "observation_noise", 0.0))  # older specs lack it
    return RunSettings(world.cluster, float(args.interval), float(delay), args.seed, args.power,
                       show_progress=show_progress, start_node=args.new_jobs == "node",
                       tiresias_threshold=threshold, observation_noise=noise,
                       efficiency_truth=world.efficiency_truth,
                       preset=getattr(args, "preset", None),
                       bootstrap_error=float(getattr(args, "bootstrap_error", 0.0) or 0.0))


def parse_options(argv: Sequence[str], cluster: str = "8x2") -> argparse.Namespace:
    """The engine options alone, parsed from ``argv`` (e.g. ``["--preset", "osdi21"]``):
    for scripts that build settings the way the commands do."""
    p = argparse.ArgumentParser(prog="coadapt-options", add_help=False)
    add_options(p, cluster)
    return p.parse_args(list(argv))
