"""Node kinds on real processes: recipes, quotas that bind, cgroups that go away."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coadapt.backends.live.backend import LiveBackend, LiveSettings
from coadapt.backends.live.kinds import (
    CGROUP_DIR,
    CgroupUnavailable,
    CpuController,
    KindCgroups,
    check_kinds,
    cleanup_leftovers,
    find_cpu_controller,
    owner_alive,
    owner_tag,
    require_cpu_controller,
)
from coadapt.jobs.procs import join_cgroup, worker_preexec
from coadapt.world.cluster import ClusterSpec
from coadapt.world.kinds import KindError, load_kinds

KINDS = load_kinds()
CTL = find_cpu_controller()
needs_cgroups = pytest.mark.skipif(CTL is None or not CTL.writable,
                                   reason="needs root and a cpu cgroup controller")


def test_controller_found_in_mounts(tmp_path):
    v1 = "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
    assert find_cpu_controller(v1).version == 1
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory\n")
    v2 = f"cgroup2 {tmp_path} cgroup2 rw 0 0\n"
    ctl = find_cpu_controller("cgroup /x cgroup rw,cpuacct 0 0\n" + v2)
    assert ctl.version == 2 and ctl.root == tmp_path
    assert find_cpu_controller("proc /proc proc rw 0 0\n") is None


def test_unknown_kind_and_missing_controller_are_clear():
    with pytest.raises(KindError, match="unknown node kind 'fast'.*known: default, half"):
        check_kinds(ClusterSpec.parse("1x1:native,1x1:fast"), KINDS)
    with pytest.raises(CgroupUnavailable, match="half need a CPU quota.*not writable.*as root"):
        require_cpu_controller(["half"], controller=CpuController(Path("/nonexistent"), 1))


def test_recipes_per_node_and_slot_without_privilege():
    with KindCgroups(ClusterSpec.parse("1x1:native,1x1:legacy"), KINDS) as kc:
        assert kc.run_dir is None  # no quota kind: no cgroup
        assert kc.recipe(0, 0).env == {} and kc.recipe(0, 0).cgroup is None
        assert kc.recipe(1, 0).env == {"ONEDNN_MAX_CPU_ISA": "SSE41",
                                       "ATEN_CPU_CAPABILITY": "default"}
        backend = LiveBackend(Path("/tmp"), ClusterSpec.parse("1x1:native,1x1:legacy"),
                              LiveSettings(status=False), cores=[0, 1], kinds=kc)
        assert backend.services.recipes((1,))[0].env["ATEN_CPU_CAPABILITY"] == "default"
        assert backend.services.recipes((0, 1))[0].env == {}
    plain = LiveBackend(Path("/tmp"), ClusterSpec.parse("1x2"), LiveSettings(status=False),
                        cores=[0, 1], kinds=KindCgroups(ClusterSpec.parse("1x2"), KINDS))
    assert plain.services.recipes((0, 1)) is None


def _busy(cgroup: str | None, seconds: float) -> subprocess.Popen[bytes]:
    code = f"import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass\n"
    return subprocess.Popen([sys.executable, "-c", code],
                            preexec_fn=worker_preexec(0, None, cgroup))


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@needs_cgroups
def test_a_half_quota_halves_a_busy_loop():
    with KindCgroups(ClusterSpec.parse("1x1:half"), KINDS) as kc:
        cg = kc.recipe(0, 0).cgroup
        assert cg is not None
        p = _busy(cg, 2.0)
        t0 = time.monotonic()
        time.sleep(1.8)
        share = _cpu_seconds(p.pid) / (time.monotonic() - t0)
        assert str(p.pid) in (Path(cg) / "cgroup.procs").read_text().split()
        p.wait()
        stat = dict(line.split() for line in (Path(cg) / "cpu.stat").read_text().splitlines())
    assert share <= 0.56, f"used {share:.2f} of a core under a 0.5 quota"
    assert int(stat.get("nr_periods", 1)) > 0


@needs_cgroups
def test_exit_kills_what_is_left_and_removes_every_cgroup():
    with KindCgroups(ClusterSpec.parse("1x2:half"), KINDS) as kc:
        run_dir = kc.run_dir
        p = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: join_cgroup(kc.recipe(0, 1).cgroup))
        time.sleep(0.1)
    assert p.wait(timeout=5) == -signal.SIGKILL
    assert not run_dir.exists()
    base = CTL.root / CGROUP_DIR
    assert not base.exists() or run_dir.name not in os.listdir(base)


@needs_cgroups
def test_leftovers_of_a_dead_owner_are_removed_and_emptied():
    owner = subprocess.Popen(["sleep", "60"])
    tag = owner_tag("run", owner.pid)
    owner.kill()
    owner.wait()
    assert owner_alive(tag) is False and owner_alive("not-a-tag") is None
    slot = CTL.root / CGROUP_DIR / tag / "node-0" / "slot-0"
    slot.mkdir(parents=True)
    left = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: join_cgroup(str(slot)))
    time.sleep(0.1)
    mine = KindCgroups(ClusterSpec.parse("1x1:half"), KINDS).__enter__()  # a live owner's
    try:
        removed = cleanup_leftovers()
        assert [r.path.name for r in removed] == [tag]
        assert removed[0].killed == (left.pid,)
        assert left.wait(timeout=5) == -signal.SIGKILL
        assert not (CTL.root / CGROUP_DIR / tag).exists()
        assert mine.run_dir.exists()  # a running run's cgroups are left alone
    finally:
        mine.close()


def test_a_quota_is_set_over_a_short_period_and_never_below_the_kernels_least(tmp_path):
    for version in (1, 2):
        d = tmp_path / f"v{version}"
        d.mkdir()
        ctl = CpuController(tmp_path, version)
        ctl.set_quota(d, 0.5)
        got = ((d / "cpu.cfs_quota_us").read_text(), (d / "cpu.cfs_period_us").read_text()) \
            if version == 1 else tuple((d / "cpu.max").read_text().split())
        assert got == ("5000", "10000")  # 5 ms of every 10 ms
        ctl.set_quota(d, 0.01)  # 0.1 ms of 10 ms is below 1 ms: a longer period instead
        got = ((d / "cpu.cfs_quota_us").read_text(), (d / "cpu.cfs_period_us").read_text()) \
            if version == 1 else tuple((d / "cpu.max").read_text().split())
        assert got == ("1000", "100000")
