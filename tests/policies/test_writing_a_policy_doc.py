"""docs/writing-a-policy.md: its policy is the shipped example, and it runs
through the real engine (simulated) from a file, with its option."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pluginkit import clean_registry  # noqa: F401 (a fixture)
from toyprofile import make_toy

from coadapt.eventlog import read_events
from coadapt.policies.plugins import resolve
from coadapt.runs.settings import RunSettings
from coadapt.runs.simulate import simulate_policy
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import JobSpec, Workload
from coadapt.world.world import World

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-a-policy.md"
EXAMPLE = ROOT / "docs" / "examples" / "shortest_first.py"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_docs_code_is_the_shipped_example():
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) == 1 and blocks[0] == EXAMPLE.read_text()


@pytest.mark.usefixtures("clean_registry")
@pytest.mark.parametrize("args, most", [([], 3), (["shortest-first.max_slots=1"], 1)])
def test_the_docs_policy_completes_every_job_in_the_engine(tmp_path, args, most):
    path = tmp_path / "shortest_first.py"
    path.write_text(python_blocks(DOC.read_text())[0])
    name = resolve(f"{path}:ShortestFirst")
    assert name == "shortest-first"
    jobs = tuple(JobSpec(f"j{i}", 40.0 * i, "toy", 1 + i % 3, 32 * (1 + i % 2)) for i in range(6))
    workload = Workload("tiny", tmp_path / "tiny.csv", jobs)
    settings = RunSettings(ClusterSpec.parse("2x4"), interval=60.0, restart_delay=5.0,
                           show_progress=False).for_policies([name], args)
    world = World.build({"toy": make_toy()}, settings.cluster)
    summary = simulate_policy(world, workload, name, settings, tmp_path / name)
    assert summary["policy"] == "shortest-first" and summary["completed"] == len(jobs)
    events = list(read_events(tmp_path / name / "events.jsonl"))
    assert events[0]["plugins"] == [f"{path}:ShortestFirst"]
    assert max(e["replicas"] for e in events if e["kind"] == "allocate") == most
