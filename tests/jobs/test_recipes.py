"""A rank's recipe (its node kind's environment and cgroup) reaches the worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from coadapt.jobs.group import Group, RunConfig
from coadapt.jobs.launch import WorkerRecipe, check_recipes, worker_env
from coadapt.jobs.spec import WorkerSpec
from coadapt.jobs.types import ConfigError
from tests.jobs.jobtest_helpers import JOB


def _cfg(tmp_path: Path, recipes: tuple[WorkerRecipe, ...] | None) -> RunConfig:
    return RunConfig(job_type=JOB, workers=2, batch_size=64, ckpt_dir=tmp_path / "ckpt",
                     max_steps=1, verify=False, recipes=recipes, timeout=60.0)


def test_worker_env_merges_the_recipe_under_the_protocol(tmp_path):
    cfg = _cfg(tmp_path, (WorkerRecipe({"ATEN_CPU_CAPABILITY": "default", "RANK": "9"}),
                          WorkerRecipe()))
    spec = WorkerSpec(job_type=JOB, job_id="j", ckpt_dir=str(tmp_path), events=None, workers=2,
                      batch_size=64, seed=0, resume=False, parent_pid=1)
    env0, env1 = (worker_env(cfg, spec, r, 1234) for r in (0, 1))
    assert env0["ATEN_CPU_CAPABILITY"] == "default" and env0["RANK"] == "0"
    assert "ATEN_CPU_CAPABILITY" not in env1 or env1["ATEN_CPU_CAPABILITY"] != "default"


def test_recipes_are_checked_before_a_launch():
    with pytest.raises(ConfigError, match="one per worker"):
        check_recipes((WorkerRecipe(),), 2)
    with pytest.raises(ConfigError, match="does not exist"):
        check_recipes((WorkerRecipe(cgroup="/nonexistent/cg"),), 1)
    check_recipes(None, 3)


def test_a_started_worker_has_its_recipe(tmp_path):
    """Through the real launch path: the worker process's own environment."""
    recipes = (WorkerRecipe({"COADAPT_TEST_KIND": "legacy", "ONEDNN_MAX_CPU_ISA": "SSE41"}),
               WorkerRecipe({"COADAPT_TEST_KIND": "native"}))
    group = Group(_cfg(tmp_path, recipes)).start()
    try:
        envs = [dict(kv.split("=", 1) for kv in Path(f"/proc/{pid}/environ").read_text()
                     .split("\0") if "=" in kv) for pid in group.pids]
    finally:
        group.kill()
    assert [e["COADAPT_TEST_KIND"] for e in envs] == ["legacy", "native"]
    assert envs[0]["ONEDNN_MAX_CPU_ISA"] == "SSE41"
