"""In-place batch-size changes of a running group, without a restart:
Group.set_batch -> control.json -> rank 0 -> the step's statistics all-reduce ->
every rank re-plans after the same step."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from jobtest_helpers import JOB, events_of, supervise_until, worker_log

from coadapt.jobs.checkpoint import CONTROL_FILE, JOB_FILE, load_checkpoint, read_json, write_control
from coadapt.jobs.data import Data, SampleStream, Split
from coadapt.jobs.group import Group, RunConfig
from coadapt.jobs.nets import MLP
from coadapt.jobs.procs import free_port, pid_alive
from coadapt.jobs.trainer import StepRunner, make_optimizer
from coadapt.jobs.types import ConfigError, JobType, plan_batch
from coadapt.models.batching import JobLimits
from coadapt.models.gradstats import GradStatsEMA

NEVER = 0.999  # accuracy target that a few steps never reach
REBATCH_LOG = re.compile(r"rebatch at step (\d+): batch (\d+) -> (\d+)")


def _cfg(root: Path, workers: int, batch: int, **kw: Any) -> RunConfig:
    return RunConfig(JOB, workers=workers, batch_size=batch, ckpt_dir=root / "ckpt",
                     events=root / "events.jsonl", target=NEVER, eval_every=1e9, timeout=60,
                     **kw)


def _obs(ev: Path) -> list[dict[str, Any]]:
    return events_of(ev, "observation")


def _rebatches(ev: Path) -> list[dict[str, Any]]:
    return [e for e in events_of(ev, "progress") if e.get("reason") == "rebatch"]


def _shape(e: dict[str, Any]) -> tuple[int, int, int]:
    return e["batch_size"], e["local_bsz"], e["accum_steps"]


def _switch(group: Group, ev: Path, batch: int, before: int = 3, after: int = 3) -> dict[str, Any]:
    """Run until ``before`` observations, request ``batch``, run until ``after``
    observations past the switch; returns the switch's progress event."""
    supervise_until(group, lambda: len(_obs(ev)) >= before, what=f"{before} observations")
    done = len(_rebatches(ev))
    group.set_batch(batch)
    supervise_until(group, lambda: len(_rebatches(ev)) > done, what="the rebatch event")
    event = _rebatches(ev)[-1]
    supervise_until(group, lambda: sum(e["step"] > event["step"] for e in _obs(ev)) >= after,
                    what="observations at the new batch")
    return event


def _assert_continuous(obs: list[dict[str, Any]]) -> None:
    """One step at a time, progress and samples only ever add (no reset)."""
    for a, b in zip(obs, obs[1:], strict=False):
        assert b["step"] == a["step"] + 1, (a, b)
        assert b["progress"] == pytest.approx(a["progress"] + b["gain"], rel=1e-9)
        assert b["progress"] > a["progress"]
        assert b["samples"] == a["samples"] + b["batch_size"]


def _assert_switch(obs: list[dict[str, Any]], event: dict[str, Any], old: tuple[int, int, int],
                   new: tuple[int, int, int], until: int | None = None) -> None:
    """Observations run ``old`` up to the event's step and ``new`` after it."""
    for e in obs:
        if until is not None and e["step"] > until:
            break
        assert _shape(e) == (old if e["step"] <= event["step"] else new), (e, event)
    at = next(e for e in obs if e["step"] == event["step"])
    assert (event["progress"], event["samples"]) == (at["progress"], at["samples"])
    assert event["run_step"] == at["run_step"]
    assert _shape(event) == new


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One worker, batch 32 (K = 1) -> 64 (K = 2) -> 16 (K = 1 again), then a stop.
    Records what the tests check; invalid requests are tried along the way."""
    root = tmp_path_factory.mktemp("rebatch1")
    ev, ckpt = root / "events.jsonl", root / "ckpt"
    group = Group(_cfg(root, 1, 32)).start()
    pids = group.pids
    supervise_until(group, lambda: len(_obs(ev)) >= 2, what="observations")
    invalid = []
    for bad in (2, 100_000, 48.0):  # below workers x min_local_bsz, above the max, no int
        with pytest.raises(ConfigError) as err:
            group.set_batch(bad)  # type: ignore[arg-type]
        invalid.append(err.value)
    control_before_valid = (ckpt / CONTROL_FILE).exists()
    first = _switch(group, ev, 64)
    alive = [pid_alive(p) for p in group.pids]
    with pytest.raises(ConfigError):
        group.set_batch(1024)
    control_after_invalid = read_json(ckpt / CONTROL_FILE)
    second = _switch(group, ev, 16)
    batch_size, plan = group.batch_size, group.plan
    group.request_stop()
    res = group.wait()
    control_at_end = read_json(ckpt / CONTROL_FILE)
    late = group.set_batch(32)  # a scheduler racing with the end: dropped, not an error
    dropped = late.batch_size == 32 and read_json(ckpt / CONTROL_FILE) == control_at_end
    return {"root": root, "dropped": dropped, "ev": ev, "ckpt": ckpt, "pids": pids, "pids_after": group.pids,
            "alive": alive, "invalid": invalid, "control_before_valid": control_before_valid,
            "control_after_invalid": control_after_invalid, "first": first, "second": second,
            "batch_size": batch_size, "plan": plan, "result": res}


def test_one_worker_switches_batch_in_place(one_worker: dict[str, Any]) -> None:
    ev, ckpt, res = one_worker["ev"], one_worker["ckpt"], one_worker["result"]
    first, second = one_worker["first"], one_worker["second"]
    assert res.status == "preempted" and res.exit_code == 0, res
    obs = _obs(ev)
    assert obs[0]["step"] == 1
    _assert_continuous(obs)
    _assert_switch(obs, first, (32, 32, 0), (64, 32, 1), until=second["step"])
    _assert_switch([e for e in obs if e["step"] > first["step"]], second, (64, 32, 1),
                   (16, 16, 0))
    assert (first["previous_batch_size"], first["requested"], first["seq"]) == (32, 64, 1)
    assert (second["previous_batch_size"], second["requested"], second["seq"]) == (64, 16, 2)
    assert first["workers"] == second["workers"] == 1
    # K = 1 -> K = 2: statistics from independent micro-batches at once; K = 2 -> K = 1:
    # the differenced estimator starts a fresh pair (its last gradient is stale).
    after = {e["step"]: e for e in obs}
    assert after[first["step"] + 1]["raw_sqr"] is not None
    assert after[second["step"] + 1]["raw_sqr"] is None
    assert after[second["step"] + 2]["raw_sqr"] is not None
    # no restart: same processes, one launch, one rendezvous
    assert one_worker["pids_after"] == one_worker["pids"] and all(one_worker["alive"])
    kinds = [e["kind"] for e in events_of(ev)]
    assert kinds.count("start") == 1 and "restart" not in kinds and "fail" not in kinds
    assert read_json(ckpt / JOB_FILE)["launches"] == 1
    assert worker_log(ckpt, 0).count("rendezvous done") == 1
    # the last batch is what the checkpoint holds
    saved = load_checkpoint(ckpt)
    assert saved["step"] == obs[-1]["step"] == res.step
    assert (saved["batch_size"], saved["local_bsz"], saved["accum_steps"]) == (16, 16, 0)
    assert one_worker["batch_size"] == 16 and one_worker["plan"].batch_size == 16
    assert one_worker["dropped"]


def test_invalid_batch_is_refused_before_writing(one_worker: dict[str, Any]) -> None:
    assert all(e.field == "batch" for e in one_worker["invalid"])
    assert one_worker["control_before_valid"] is False
    assert one_worker["control_after_invalid"] == {"batch_size": 64, "seq": 1, "launch": 1}


def test_set_batch_needs_a_running_launch(tmp_path: Path) -> None:
    group = Group(_cfg(tmp_path, 1, 32))
    with pytest.raises(RuntimeError, match="before start"):
        group.set_batch(64)
    assert not (tmp_path / "ckpt" / CONTROL_FILE).exists()


def test_two_workers_switch_at_the_same_step(tmp_path: Path) -> None:
    ev, ckpt = tmp_path / "events.jsonl", tmp_path / "ckpt"
    group = Group(_cfg(tmp_path, 2, 64)).start()
    pids = group.pids
    event = _switch(group, ev, 32)
    assert group.pids == pids and all(pid_alive(p) for p in pids)
    group.request_stop()
    res = group.wait()
    assert res.status == "preempted", res
    obs = _obs(ev)
    _assert_continuous(obs)
    _assert_switch(obs, event, (64, 32, 0), (32, 16, 0))
    assert (event["workers"], event["requested"], event["seq"]) == (2, 32, 1)
    # rank 1 re-planned after the same step as rank 0 (had it not, the ranks' micro-batch
    # counts and data streams would disagree and the run would hang or diverge)
    for rank in (0, 1):
        text = worker_log(ckpt, rank)
        assert REBATCH_LOG.findall(text) == [(str(event["step"]), "64", "32")], text[-2000:]
        assert text.count("rendezvous done") == 1
    assert [e["kind"] for e in events_of(ev)].count("start") == 1
    assert load_checkpoint(ckpt)["batch_size"] == 32


def test_stale_control_file_does_not_touch_a_relaunch(one_worker: dict[str, Any],
                                                      tmp_path: Path) -> None:
    """The first launch left control.json (batch 16, launch 1). A relaunch at 32 runs
    32: start() deletes the file, and a request addressed to launch 1 (an old
    handle writing late) is ignored; the relaunch's own requests still work."""
    shutil.copytree(one_worker["ckpt"], tmp_path / "ckpt")
    shutil.copy(one_worker["ev"], tmp_path / "events.jsonl")
    ev, ckpt = tmp_path / "events.jsonl", tmp_path / "ckpt"
    assert read_json(ckpt / CONTROL_FILE)["batch_size"] == 16
    last = _obs(ev)[-1]["step"]
    old_switches = len(_rebatches(ev))
    group = Group(_cfg(tmp_path, 1, 32, resume=True)).start()
    assert not (ckpt / CONTROL_FILE).exists()
    supervise_until(group, lambda: _obs(ev)[-1]["step"] >= last + 2, what="relaunch steps")
    write_control(ckpt, batch_size=64, seq=99, launch=1)
    supervise_until(group, lambda: "ignoring control.json of launch 1" in worker_log(ckpt, 0),
                    what="rank 0 to see the stale request")
    event = _switch(group, ev, 48, before=0, after=2)
    group.request_stop()
    assert group.wait().status == "preempted"
    new = [e for e in _obs(ev) if e["step"] > last]
    assert new[0]["step"] == last + 1
    _assert_continuous(_obs(ev))
    _assert_switch(new, event, (32, 32, 0), (48, 24, 1))
    assert len(_rebatches(ev)) == old_switches + 1
    assert (event["seq"], event["previous_batch_size"]) == (1, 32)
    assert events_of(ev, "restart")[-1]["batch_size"] == 32
    assert load_checkpoint(ckpt)["batch_size"] == 48


@pytest.fixture()
def one_rank_group():  # noqa: ANN201
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}",
                            rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_set_plan_averages_over_the_new_k_and_restarts_the_pair(one_rank_group) -> None:
    """In-process, against hand-computed gradients: after K = 1 -> K = 4 the update
    is the mean over the 4 micro-batches (the comm hook divides by the new K);
    after K = 4 -> K = 1 the differenced estimator waits for a fresh pair."""
    torch.manual_seed(0)
    split = Split(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    job = JobType(name="tiny", family="mlp", description="test",
                  load_data=lambda: Data(split, split, classes=3),
                  build_model=lambda: MLP(8, 16, 3), task="classify", metric="accuracy",
                  target=1.0, higher_is_better=True,
                  limits=JobLimits(init_batch_size=4, max_batch_size=64, min_local_bsz=1,
                                   max_local_bsz=4, max_replicas=64),
                  eval_every=1.0, dataset_size=64, base_lr=0.1, momentum=0.0)
    model = job.build_model()
    runner = StepRunner(job, model, make_optimizer(job, model), split, plan_batch(job, 1, 4),
                        SampleStream(64, seed=0), GradStatsEMA(), 0, 1)
    assert runner.step(stop=False).raw_sqr is None
    assert runner.step(stop=False).raw_sqr is not None
    runner.set_plan(plan_batch(job, 1, 16))
    assert (runner.plan.micro, runner.plan.micro_batches) == (4, 4)
    ref = copy.deepcopy(model)
    stream = SampleStream(64, seed=0)
    stream.take(8)
    idx = stream.take(16)
    grads = []
    for a in range(4):
        ref.zero_grad()
        sel = idx[a * 4:(a + 1) * 4]
        torch.nn.functional.cross_entropy(ref(split.inputs[sel]), split.targets[sel]).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in ref.parameters()]).double())
    before = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
    res = runner.step(stop=False)
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
    assert torch.allclose(after, before - res.lr * torch.stack(grads).mean(0), atol=1e-6)
    assert res.raw_sqr is not None
    runner.set_plan(plan_batch(job, 1, 4))
    assert runner.step(stop=False).raw_sqr is None
    assert runner.step(stop=False).raw_sqr is not None
