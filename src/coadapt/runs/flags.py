"""The engine options every command that runs the engine shares, as argparse
flags: their names, defaults, help and the presets. Only the standard library
is imported here, so that a command's ``--help`` is instant; resolving the
options into a world and settings is :mod:`coadapt.runs.options`.

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
import math
from collections.abc import Callable, Sequence
from typing import Any

from coadapt.world.names import CALIBRATIONS_DIR, EFFICIENCY_TRUTHS, KIND_SPEEDS_FILE, SOSP23_CLUSTER

DEFAULT_CLUSTER = "8x2"
"""Every simulated command's cluster (live's is this machine's cores)."""
DEFAULT_SEED = 1
"""Seeds count from 1 everywhere (``--seed``, ``--seeds N`` = 1..N)."""

MIN_INTERVAL = 0.001
"""The shortest scheduling round, in seconds (a millisecond)."""
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


def finite(lo: float = -math.inf, hi: float = math.inf, *,
           above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in [lo, hi] (``above``: > lo), so that
    NaN, inf and out-of-range values end at the parser with exit 2, before
    anything is written."""
    where = "".join([f" {'>' if above else '>='} {lo:g}" if lo > -math.inf else "",
                     " and" if lo > -math.inf and hi < math.inf else "",
                     f" <= {hi:g}" if hi < math.inf else ""])

    def number(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(x) or x < lo or (above and x == lo) or x > hi:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number{where}")
        return x

    return number


def count(lo: int = 1, hi: int = 10**9) -> Callable[[str], int]:
    """An argparse type: a whole number in [lo, hi] (exit 2 at the parser otherwise)."""

    def number(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number >= {lo} and "
                                             f"<= {hi:,}")
        return n

    return number


def _bandwidths(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected Gbit/s numbers like 1,10,100, got {text!r}") from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected finite Gbit/s numbers > 0 like 1,10,100, "
                                         f"got {text!r}")
    return values


def add_options(p: argparse.ArgumentParser, cluster: str = DEFAULT_CLUSTER, *,
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
        p.add_argument("--bandwidth", type=finite(0, above=True), default=10.0, metavar="GBIT_S",
                       help="network between nodes, for all-reduce across nodes of CPU profiles "
                       "(default 10)")
    p.add_argument("--latency", type=finite(0), default=50.0, metavar="US",
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
    p.add_argument("--interval", type=finite(MIN_INTERVAL), default=_UnsetFloat(15.0),
                   help="scheduling round length in seconds (default 15)")
    p.add_argument("--restart-delay", type=finite(0), default=None,
                   help="restart delay the policies assume (and that jobs pay without measured "
                   f"costs); default: the median measured restart, else {FALLBACK_RESTART:g} s")
    p.add_argument("--new-jobs", choices=("node", "one"), default=_UnsetStr("node"),
                   help="a job that never ran may start on up to one node (or its request): "
                   "'node' (default), or on one slot as in the Pollux study: 'one'")
    p.add_argument("--tiresias-threshold", default=_UnsetStr("auto"), metavar="auto|SLOT_SECONDS",
                   help="Tiresias's queue threshold; 'auto' (default): the median job's "
                   "service at its request, estimated from the profiles")
    p.add_argument("--p", type=finite(), default=-1.0, dest="power",
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
    p.add_argument("--horizon", type=finite(0, above=True), default=None, metavar="SECONDS",
                   help="the experiment time at which a run gives up: the jobs not finished by "
                   "then are stopped and logged as failed (default: 20 x (the last submit time "
                   "+ the jobs' estimated isolated run time at their requests) + a day)")
    if seed:
        p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                       help=f"random seed, recorded in the log (default {DEFAULT_SEED})")



def parse_options(argv: Sequence[str], cluster: str = DEFAULT_CLUSTER) -> argparse.Namespace:
    """The engine options alone, parsed from ``argv`` (e.g. ``["--preset", "osdi21"]``):
    for scripts that build settings the way the commands do."""
    p = argparse.ArgumentParser(prog="coadapt-options", add_help=False)
    add_options(p, cluster)
    return p.parse_args(list(argv))
