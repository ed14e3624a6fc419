"""Node kinds on real processes: each rank's recipe and the cgroups of a run.

A rank on a node of kind K starts with K's environment (instruction-set
limits, :meth:`coadapt.world.kinds.NodeKind.env`) and, when K has a CPU
quota, inside a cgroup that enforces it. :class:`KindCgroups` makes those
cgroups for one run and removes them when it ends, however it ends:

    <cpu controller>/coadapt/<label>-<owner pid>-<owner start>/node-<i>/slot-<j>

``node-<i>`` holds the node's budget (quota x slots), ``slot-<j>`` one slot's
(quota), the one a rank joins, so a worker gets its quota whether or not the
node's other slots are busy (as the calibration measured it). On v1 the
limits are ``cpu.cfs_period_us``/``cpu.cfs_quota_us``, on v2 ``cpu.max``.

The owner's pid and start time name the run, so a later run tells a live
owner from a dead one: :func:`cleanup_leftovers` removes (and empties) the
cgroups of runs whose owner died without removing them (a SIGKILL).
"""

from __future__ import annotations

import errno
import logging
import math
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from coadapt.jobs.launch import WorkerRecipe
from coadapt.jobs.procs import pid_alive, start_time
from coadapt.world.cluster import NodeSlots
from coadapt.world.kinds import KindError, NodeKind

log = logging.getLogger(__name__)

CGROUP_DIR = "coadapt"
PERIOD_US = 10_000
"""The quota's period: 10 ms (the kernel's default is 100 ms), so a half-core kind
throttles within a step of a few milliseconds, as a slower core would, instead of
running some steps at full speed and stalling others for 50 ms."""
MOUNTS = Path("/proc/self/mounts")
PLAIN = WorkerRecipe()


class CgroupUnavailable(RuntimeError):
    """A kind needs a CPU quota and this process cannot make cgroups; the
    message says what is missing and what to do."""


@dataclass(frozen=True)
class CpuController:
    """Where the cpu controller is mounted, and which cgroup version it is."""

    root: Path
    version: int  # 1 or 2

    def enable(self, d: Path) -> None:
        """v2: let ``d``'s children have CPU limits (v1 needs nothing)."""
        if self.version == 2:
            _write(d / "cgroup.subtree_control", "+cpu")

    def set_quota(self, d: Path, cores: float) -> None:
        """Limit the processes in ``d`` to ``cores`` cores of CPU time."""
        period = max(PERIOD_US, math.ceil(1000 / cores))  # the kernel's least quota: 1 ms
        quota = max(int(round(cores * period)), 1000)
        if self.version == 1:
            _write(d / "cpu.cfs_period_us", str(period))
            _write(d / "cpu.cfs_quota_us", str(quota))
        else:
            _write(d / "cpu.max", f"{quota} {period}")

    @property
    def writable(self) -> bool:
        return os.access(self.root, os.W_OK)


def _write(path: Path, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def find_cpu_controller(mounts: str | None = None) -> CpuController | None:
    """The cpu controller from ``/proc/self/mounts`` (a v1 hierarchy with the
    ``cpu`` option, else a v2 one listing ``cpu``), or None."""
    text = MOUNTS.read_text() if mounts is None else mounts
    v2 = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        mnt, typ, opts = Path(parts[1]), parts[2], parts[3].split(",")
        if typ == "cgroup" and "cpu" in opts:
            return CpuController(mnt, 1)
        if typ == "cgroup2" and v2 is None:
            try:
                if "cpu" in (mnt / "cgroup.controllers").read_text().split():
                    v2 = CpuController(mnt, 2)
            except OSError:
                continue
    return v2


def check_kinds(cluster: NodeSlots, kinds: Mapping[str, NodeKind]) -> None:
    """KindError naming the cluster's kinds that ``kinds`` does not define."""
    unknown = [k for k in cluster.kinds if k not in kinds]
    if unknown:
        raise KindError(f"--cluster: unknown node kind {', '.join(map(repr, unknown))}; known: "
                        f"{', '.join(sorted(kinds))} (define more with --kinds FILE, TOML "
                        "[kind.NAME] tables like coadapt/world/kinds.toml)")


def quota_kinds(cluster: NodeSlots, kinds: Mapping[str, NodeKind]) -> list[str]:
    """The cluster's kinds that need a cgroup (they have a CPU quota)."""
    check_kinds(cluster, kinds)
    return [k for k in cluster.kinds if kinds[k].cpu_quota is not None]


def require_cpu_controller(needing: Sequence[str],
                           controller: CpuController | None = None) -> CpuController:
    """The writable cpu controller the kinds ``needing`` a quota use, or
    CgroupUnavailable saying what is missing and what to do."""
    ctl = controller or find_cpu_controller()
    what = f"node kind(s) {', '.join(needing)} need a CPU quota through a cgroup, but"
    todo = ("run as root on Linux with the cpu cgroup controller (v1: mounted at "
            "/sys/fs/cgroup/cpu; v2: 'cpu' in /sys/fs/cgroup/cgroup.controllers), or use "
            "kinds without cpu_quota (e.g. native, legacy)")
    if ctl is None:
        raise CgroupUnavailable(f"{what} no cpu cgroup controller is mounted; {todo}")
    if not ctl.writable:
        raise CgroupUnavailable(f"{what} {ctl.root} is not writable by this process; {todo}")
    return ctl


def owner_tag(label: str, pid: int | None = None) -> str:
    """``<label>-<pid>-<start time>``: names a run by its owner process."""
    pid = os.getpid() if pid is None else pid
    return f"{label}-{pid}-{start_time(pid)}"


def owner_alive(tag: str) -> bool | None:
    """Whether the process that made the run ``tag`` still runs (None: not a tag)."""
    parts = tag.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    pid = int(parts[1])
    return pid_alive(pid) and start_time(pid) == int(parts[2])


def _pids(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove_tree(d: Path, timeout: float = 5.0) -> list[int]:
    """Kill every process left in cgroup ``d`` and its children, then remove
    them, deepest first; the pids killed."""
    killed: list[int] = []
    for child in sorted((p for p in d.iterdir() if p.is_dir()), reverse=True):
        killed += remove_tree(child, timeout)
    deadline = time.monotonic() + timeout
    while True:
        pids = _pids(d)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        try:
            d.rmdir()
            return sorted(set(killed))
        except FileNotFoundError:
            return sorted(set(killed))
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


@dataclass(frozen=True)
class Leftover:
    """A cgroup removed because the run that made it did not end cleanly."""

    path: Path
    killed: tuple[int, ...]


def cleanup_leftovers(controller: CpuController | None = None) -> list[Leftover]:
    """Remove the coadapt cgroups whose owner process is gone (killing what
    is still in them); what was removed, for the caller to say so."""
    ctl = controller or find_cpu_controller()
    if ctl is None or not ctl.writable or not (ctl.root / CGROUP_DIR).is_dir():
        return []
    base = ctl.root / CGROUP_DIR
    out = []
    for d in sorted(p for p in base.iterdir() if p.is_dir()):
        if owner_alive(d.name) is False:
            out.append(Leftover(d, tuple(remove_tree(d))))
    _remove_if_empty(base)
    return out


def _remove_if_empty(base: Path) -> None:
    """Remove ``base`` unless another run still has cgroups in it."""
    try:
        base.rmdir()
    except OSError:
        pass  # EBUSY: another run's cgroups are in it; ENOENT: gone already


class KindCgroups:
    """The recipes of a run's nodes, and the cgroups of its quota kinds.

    A context manager: entering makes one cgroup per node whose kind has a
    CPU quota (and one per slot in it), exiting kills what is left in them
    and removes them all. ``recipe(node, slot)`` is what a rank there runs
    with. Without a quota kind it makes nothing and needs no privilege."""

    def __init__(self, cluster: NodeSlots, kinds: Mapping[str, NodeKind], label: str = "run",
                 controller: CpuController | None = None) -> None:
        self.cluster = cluster
        check_kinds(cluster, kinds)
        self.kinds = {k: kinds[k] for k in cluster.kinds}
        self.label = label
        self._controller = controller
        self.run_dir: Path | None = None
        self._slots: dict[tuple[int, int], str] = {}

    def __enter__(self) -> KindCgroups:
        needing = quota_kinds(self.cluster, self.kinds)
        if not needing:
            return self
        ctl = require_cpu_controller(needing, self._controller)
        try:
            self._make(ctl)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _make(self, ctl: CpuController) -> None:
        base = ctl.root / CGROUP_DIR
        for attempt in range(3):  # another run may remove an empty base meanwhile
            try:
                base.mkdir(exist_ok=True)
                ctl.enable(ctl.root)
                ctl.enable(base)
                self.run_dir = base / owner_tag(self.label)
                self.run_dir.mkdir()
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        assert self.run_dir is not None
        ctl.enable(self.run_dir)
        for node in self.cluster.nodes:
            quota = self.kinds[node.kind].cpu_quota
            if quota is None:
                continue
            nd = self.run_dir / f"node-{node.index}"
            nd.mkdir()
            ctl.set_quota(nd, quota * node.slots)
            ctl.enable(nd)
            for j in range(node.slots):
                sd = nd / f"slot-{j}"
                sd.mkdir()
                ctl.set_quota(sd, quota)
                self._slots[(node.index, j)] = str(sd)
        log.info("cgroups for node kinds %s in %s", ", ".join(
            f"{k} ({self.kinds[k].cpu_quota:g} core/slot)" for k in self.kinds
            if self.kinds[k].cpu_quota is not None), self.run_dir)

    def recipe(self, node: int, slot: int) -> WorkerRecipe:
        """What a rank on ``slot`` of ``node`` runs with."""
        kind = self.kinds[self.cluster.nodes[node].kind]
        cgroup = self._slots.get((node, slot))
        if not kind.env() and cgroup is None:
            return PLAIN
        return WorkerRecipe(kind.env(), cgroup)

    @property
    def emulated(self) -> bool:
        """Whether any node's workers differ from plain ones."""
        return any(k.emulated for k in self.kinds.values())

    def describe(self) -> dict[str, object]:
        """For the run's log header: each kind's recipe and where the cgroups are."""
        return {"kinds": {k: {"env": v.env(), "cpu_quota": v.cpu_quota}
                          for k, v in self.kinds.items()},
                "cgroups": str(self.run_dir) if self.run_dir is not None else None}

    def close(self) -> list[int]:
        """Kill what is left in this run's cgroups and remove them (idempotent);
        the pids killed."""
        if self.run_dir is None:
            return []
        run_dir, self.run_dir = self.run_dir, None
        self._slots.clear()
        killed = remove_tree(run_dir) if run_dir.exists() else []
        if killed:
            log.warning("killed %d process(es) still in %s: %s", len(killed), run_dir, killed)
        _remove_if_empty(run_dir.parent)
        return killed
