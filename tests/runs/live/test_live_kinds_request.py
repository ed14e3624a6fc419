"""A live run on node kinds: unknown kinds refused before anything starts;
leftover cgroups of a killed run removed, and said so, at the next start."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest

from coadapt.backends.live.kinds import CGROUP_DIR, find_cpu_controller, owner_tag
from coadapt.cli import build_parser
from coadapt.runs.live.workflow import Invocation, LiveRequestError, run_workflow

CTL = find_cpu_controller()


def _spec(tmp_path: Path, cluster: str) -> dict:
    wl = tmp_path / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\na,0,mlp-mnist1d,1,32\n")
    args = build_parser().parse_args(["live", "--workload", str(wl), "--cluster", cluster,
                                      "--out", str(tmp_path / "out"), "--calibration",
                                      "profiles", "--no-compare", "--no-status"])
    spec = vars(args).copy()
    spec.update(targets={}, evals={})
    spec.pop("func", None)
    return spec


def test_an_unknown_kind_is_refused_listing_the_known(tmp_path):
    with pytest.raises(LiveRequestError, match="warp.*known: .*legacy"):
        run_workflow(_spec(tmp_path, "1x1:native,1x1:warp"), Invocation(status=False))
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(CTL is None or not CTL.writable, reason="needs root and a cpu controller")
def test_leftovers_are_removed_and_said_at_the_next_start(tmp_path, caplog):
    dead = subprocess.Popen(["sleep", "60"])
    tag = owner_tag("run", dead.pid)
    dead.kill()
    dead.wait()
    (CTL.root / CGROUP_DIR / tag / "node-0").mkdir(parents=True)
    with caplog.at_level(logging.WARNING), pytest.raises(LiveRequestError):
        run_workflow(_spec(tmp_path, "1x1:native,1x1:warp"), Invocation(status=False))
    assert not (CTL.root / CGROUP_DIR / tag).exists()
    assert f"removed leftover cgroup {CTL.root / CGROUP_DIR / tag}" in caplog.text
    assert "did not end cleanly" in caplog.text
