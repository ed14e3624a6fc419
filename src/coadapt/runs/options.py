"""The engine options resolved into a run: the world (cluster, profiles,
calibrations) and ``RunSettings``. The flags themselves, their defaults and the
presets are :mod:`coadapt.runs.flags` (light, for instant ``--help``).
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path

from coadapt.engine.loop import default_horizon
from coadapt.runs.flags import (  # noqa: F401 (re-exported: the flags are part of this API)
    FALLBACK_RESTART,
    MIN_INTERVAL,
    PRESETS,
    add_options,
    apply_preset,
    given,
    parse_options,
)
from coadapt.runs.settings import RunSettings, check_observation_noise
from coadapt.world.cluster import ClusterSpec, Network
from coadapt.world.costs import CALIBRATIONS_DIR, LiveCosts, machine_fingerprint
from coadapt.world.kinds import KIND_SPEEDS_FILE, KindSpeeds, load_kind_speeds
from coadapt.world.profiles.network import load_network_calibration, network_for
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.study import STUDIES
from coadapt.world.workload import Workload, check_requests
from coadapt.world.world import PLAIN_KINDS, World, check_bootstrap_error


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


def _number(option: str, value: object, lo: float = -math.inf, *, above: bool = False) -> float:
    """``value`` as a finite float >= ``lo`` (> with ``above``); ValueError names
    the option (NaN passes every comparison, so it is refused first)."""
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{option} {value!r}: expected a number") from None
    if not math.isfinite(x) or x < lo or (above and x == lo):
        bound = f" {'>' if above else '>='} {lo:g}" if lo > -math.inf else ""
        raise ValueError(f"{option} {value!r}: expected a finite number{bound}")
    return x


def isolated_seconds(world: World, workload: Workload) -> float | None:
    """The workload's jobs' summed isolated run time at their requests (replicas
    within what one job can hold), estimated as Tiresias's threshold is; None
    when a job type has no profile to price it."""
    if not all(j.application in world.truths for j in workload.jobs):
        return None
    cap = world.cluster.max_job_slots
    times = [world.estimated_jct(j.application, min(j.num_replicas, cap), j.batch_size)
             for j in workload.jobs]
    finite = [t for t in times if math.isfinite(t)]
    return sum(finite) if finite else None


def settings(args: argparse.Namespace, world: World, workload: Workload,
             show_progress: bool = True) -> RunSettings:
    """RunSettings from the options (a preset filled in) in ``world``, every one
    checked finite and in range before anything is written, and the workload's
    requests checked against the job types' limits; ValueError (WorkloadError
    for a request) names the bad one."""
    args = apply_preset(args)
    check_requests(workload, world.limits)
    interval = _number("--interval", args.interval, MIN_INTERVAL)
    delay = args.restart_delay
    costs = world.costs
    if delay is None:
        delay = costs.policy_restart_delay() if costs is not None else FALLBACK_RESTART
    delay = _number("--restart-delay", delay, 0.0)
    power = _number("--p", args.power)
    noise = check_observation_noise(getattr(args, "observation_noise", 0.0))  # older specs lack it
    bootstrap = check_bootstrap_error(_number("--bootstrap-error",
                                              getattr(args, "bootstrap_error", 0.0) or 0.0, 0.0))
    horizon = getattr(args, "horizon", None)  # older specs lack it
    horizon = default_horizon(workload, isolated_seconds(world, workload)) if horizon is None \
        else _number("--horizon", horizon, 0.0, above=True)
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
        threshold = _number("--tiresias-threshold", threshold, 0.0)
    return RunSettings(world.cluster, interval, delay, args.seed, power,
                       show_progress=show_progress, start_node=args.new_jobs == "node",
                       tiresias_threshold=threshold, observation_noise=noise,
                       efficiency_truth=world.efficiency_truth,
                       preset=getattr(args, "preset", None),
                       bootstrap_error=bootstrap, horizon=horizon)


