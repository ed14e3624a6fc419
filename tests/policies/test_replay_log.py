"""A replay reads its recording whole first: an empty or header-less log, or
one of another workload, is refused before a round is simulated."""

from __future__ import annotations

import pytest
from reportlogs import Job, write_log

from coadapt.policies.replay import ReplayPolicy
from coadapt.world.workload import JobSpec, Workload

WL = Workload("toy-wl", None, (JobSpec("a", 0.0, "toy", 2, 64), JobSpec("b", 20.0, "toy", 2, 64)))


def test_a_recording_of_the_workload_replays(tmp_path):
    path = write_log(tmp_path, "fixed", [Job("a", 0.0, 100.0), Job("b", 20.0, 120.0)])
    policy = ReplayPolicy.from_log(path, WL)
    assert set(policy.timeline) == {"a", "b"} and policy.ends == {"a": 100.0, "b": 120.0}


@pytest.mark.parametrize("damage,message", [
    ("empty", "empty: no header and no events"),
    ("headerless", ":1: no header"),
    ("other", "records workload 'toy-wl', not 'toy-wl' (its jobs x, y are not in it)"),
])
def test_a_recording_it_cannot_replay_is_refused(tmp_path, damage, message):
    jobs = [Job("x", 0.0, 10.0), Job("y", 1.0, 12.0)] if damage == "other" else [Job("a", 0.0, 9.0)]
    path = write_log(tmp_path, "fixed", jobs)
    lines = path.read_text().splitlines(keepends=True)
    if damage == "empty":
        path.write_text("")
    elif damage == "headerless":
        path.write_text("".join(lines[1:]))
    with pytest.raises(ValueError, match="^" + ("--replay " if damage == "other" else "")
                       + f"{path}.*" + message.replace("(", r"\(").replace(")", r"\)")):
        ReplayPolicy.from_log(path, WL)
