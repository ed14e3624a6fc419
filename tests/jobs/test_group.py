"""Real worker groups: events, graceful stop + resume at a new size, crash handling."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from jobtest_helpers import JOB, cli, events_of, supervise_until, wait_for, worker_log

from coadapt.jobs.checkpoint import load_checkpoint
from coadapt.jobs.group import Group, RunConfig, run_group
from coadapt.jobs.procs import children_of, pid_alive
from coadapt.jobs.types import ConfigError
from coadapt.jobs.verify import verify

OBS_FIELDS = {
    "step": int, "step_time": float, "sync_time": float, "cpu_time": float, "local_bsz": int,
    "accum_steps": int, "batch_size": int, "workers": int, "grad_sqr": float,
    "grad_var": float, "progress": float, "samples": int, "gain": float, "lr": float,
}
NEVER = 0.999  # accuracy target that a few steps never reach


@pytest.fixture(scope="module")
def completed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    d = tmp_path_factory.mktemp("complete")
    ev = d / "events.jsonl"
    res = run_group(RunConfig(JOB, workers=2, batch_size=64, ckpt_dir=d / "ckpt", events=ev,
                              target=0.3, eval_every=20.0, timeout=120))
    return d / "ckpt", ev, res


def test_two_workers_reach_low_target_and_verify(completed) -> None:
    ckpt, ev, res = completed
    assert res.status == "complete" and res.exit_code == 0 and res.verified is True
    kinds = [e["kind"] for e in events_of(ev)]
    assert kinds[0] == "start" and kinds[-1] == "complete"
    assert {"observation", "validation", "checkpoint"} <= set(kinds)
    done = events_of(ev, "complete")[0]
    assert done["verified"] is True and done["metric"] >= 0.3
    assert done["metric"] == pytest.approx(done["train_metric"], abs=1e-6)


def test_observation_events_are_well_formed(completed) -> None:
    _, ev, _ = completed
    obs = events_of(ev, "observation")
    assert len(obs) >= 5
    for i, e in enumerate(obs, start=1):
        for name, typ in OBS_FIELDS.items():
            assert isinstance(e[name], typ | int if typ is float else typ), (name, e)
        assert e["step"] == i and e["samples"] == 64 * i
        assert (e["workers"], e["batch_size"], e["local_bsz"], e["accum_steps"]) == (2, 64, 32, 0)
        assert 0 <= e["sync_time"] <= e["step_time"] and e["cpu_time"] > 0
        assert e["job"] == JOB and e["t"] >= 0
    assert all(b["progress"] > a["progress"] for a, b in zip(obs, obs[1:], strict=False))
    assert all(b["t"] >= a["t"] for a, b in zip(obs, obs[1:], strict=False))
    assert all(1.0 <= e["gain"] <= 2.0 + 1e-9 for e in obs)


def test_verify_confirms_and_denies(completed) -> None:
    ckpt, _, _ = completed
    ok = verify(ckpt)
    assert ok.reached and ok.metric >= 0.3 and ok.job_type == JOB
    assert not verify(ckpt, target=NEVER).reached


def test_verify_command_exit_codes(completed, capsys: pytest.CaptureFixture[str]) -> None:
    from coadapt.jobs.__main__ import main

    ckpt, _, _ = completed
    assert main(["verify", str(ckpt)]) == 0
    assert "REACHED" in capsys.readouterr().out
    assert main(["verify", str(ckpt), "--target", str(NEVER)]) == 1
    assert "NOT reached" in capsys.readouterr().out


def test_sigterm_checkpoints_and_resume_with_new_size(tmp_path: Path) -> None:
    ckpt, ev = tmp_path / "ckpt", tmp_path / "events.jsonl"
    proc = cli("run", JOB, "-k", "2", "--batch", "64", "--ckpt", str(ckpt), "--events", str(ev),
               "--target", str(NEVER), "--eval-every", "1e9")
    wait_for(lambda: len(events_of(ev, "observation")) >= 10, what="observations")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert out.decode().startswith("preempted")
    before = events_of(ev, "observation")[-1]
    saved = events_of(ev, "checkpoint")[-1]
    assert saved["reason"] == "preempted" and saved["step"] == before["step"]

    res = run_group(RunConfig(JOB, workers=1, batch_size=512, ckpt_dir=ckpt, resume=True,
                              events=ev, target=NEVER, eval_every=1e9, max_steps=3, timeout=120))
    assert res.status == "max_steps" and res.exit_code == 0
    assert events_of(ev, "restart")[-1]["workers"] == 1
    after = [e for e in events_of(ev, "observation") if e["step"] > before["step"]]
    assert [e["step"] for e in after] == [before["step"] + i for i in (1, 2, 3)]
    first = after[0]
    assert (first["workers"], first["batch_size"], first["local_bsz"], first["accum_steps"]) \
        == (1, 512, 256, 1)
    assert first["progress"] == pytest.approx(before["progress"] + first["gain"])
    assert first["samples"] == before["samples"] + 512
    assert first["t"] > before["t"]
    assert 1.0 <= first["gain"] <= 16.0
    assert load_checkpoint(ckpt)["step"] == before["step"] + 3


def test_killed_worker_fails_group_and_resume_uses_last_checkpoint(tmp_path: Path) -> None:
    ckpt, ev = tmp_path / "ckpt", tmp_path / "events.jsonl"
    group = Group(RunConfig(JOB, workers=2, batch_size=64, ckpt_dir=ckpt, events=ev,
                            target=NEVER, eval_every=5.0, timeout=120)).start()
    pids = group.pids
    wait_for(lambda: group.poll() is not None or len(events_of(ev, "checkpoint")) >= 2,
             what="a periodic checkpoint")
    os.kill(pids[1], signal.SIGKILL)
    res = group.wait()
    assert res.status == "failed" and res.exit_code == 1
    assert not any(pid_alive(p) for p in pids)
    assert not set(pids) & set(children_of(os.getpid()))
    assert events_of(ev, "fail")
    last = load_checkpoint(ckpt)
    res2 = run_group(RunConfig(JOB, workers=2, batch_size=96, ckpt_dir=ckpt, resume=True,
                               events=ev, target=NEVER, eval_every=1e9, max_steps=2,
                               timeout=120))
    assert res2.status == "max_steps"
    first = [e for e in events_of(ev, "observation") if e["batch_size"] == 96][0]
    assert first["step"] == last["step"] + 1
    assert first["progress"] == pytest.approx(last["progress"] + first["gain"])


def test_parent_sigkill_takes_workers_down(tmp_path: Path) -> None:
    ev = tmp_path / "events.jsonl"
    proc = cli("run", JOB, "-k", "2", "--ckpt", str(tmp_path / "ckpt"), "--events", str(ev),
               "--target", str(NEVER))
    wait_for(lambda: len(events_of(ev, "observation")) >= 3, what="observations")
    workers = children_of(proc.pid)
    assert len(workers) == 2
    proc.kill()
    proc.wait()
    wait_for(lambda: not any(pid_alive(p) for p in workers), timeout=10, what="workers to die")


def test_stop_after_checkpoints_gracefully(tmp_path: Path) -> None:
    """A wall-clock limit (the profiler's budget) stops the group like SIGTERM does:
    status time_limit, exit 0, a checkpoint at the last step, resumable."""
    ckpt, ev = tmp_path / "ckpt", tmp_path / "events.jsonl"
    res = run_group(RunConfig(JOB, workers=1, batch_size=64, ckpt_dir=ckpt, events=ev,
                              target=NEVER, eval_every=1e9, stop_after=4.0, timeout=120))
    assert res.status == "time_limit" and res.exit_code == 0, res
    assert 4.0 <= res.wall_seconds < 60.0
    last = events_of(ev, "observation")[-1]
    assert load_checkpoint(ckpt)["step"] == last["step"] == res.step
    again = run_group(RunConfig(JOB, workers=1, batch_size=64, ckpt_dir=ckpt, resume=True,
                                events=ev, target=NEVER, eval_every=1e9, max_steps=2,
                                timeout=120))
    assert again.status == "max_steps" and again.step == res.step + 2


def test_pinned_worker_and_verifier(tmp_path: Path) -> None:
    """cores=(0,) pins the worker, and the verifier it spawns at completion, to core 0;
    the start event records the cores; worker_timeout reaches the gloo group."""
    if 0 not in os.sched_getaffinity(0):
        pytest.skip("core 0 is not usable here")
    ckpt, ev = tmp_path / "ckpt", tmp_path / "events.jsonl"
    group = Group(RunConfig(JOB, workers=1, batch_size=32, ckpt_dir=ckpt, events=ev,
                            target=0.3, eval_every=10.0, timeout=60, cores=(0,),
                            worker_timeout=60.0, exit_grace=20.0)).start()
    assert group.cores == (0,)
    assert os.sched_getaffinity(group.pids[0]) == {0}
    supervise_until(group, lambda: len(events_of(ev, "observation")) >= 1, what="a step")
    assert os.sched_getaffinity(group.pids[0]) == {0}
    verifier: set[int] | None = None
    while (res := group.poll()) is None:
        # the verifier by its command line: other children of this test process (e.g. the
        # resource tracker of an earlier test's spawn pool) are not the group's
        helpers = {c for c in set(children_of(os.getpid())) - set(group.pids)
                   if b"coadapt.jobs.verify" in _cmdline(c)}
        if verifier is None and helpers:
            verifier = os.sched_getaffinity(helpers.pop())
            assert group.verifying
        time.sleep(0.02)
    assert res.status == "complete" and res.verified is True, res
    assert verifier == {0} and not group.verifying
    assert events_of(ev, "start")[0]["cores"] == [0]
    assert "gloo timeout 60 s, cpus [0]" in worker_log(ckpt, 0)


@pytest.mark.parametrize(("fields", "field"), [
    ({"workers": 2, "cores": (0,)}, "cores"),
    ({"workers": 1, "cores": (0, 1)}, "cores"),
    ({"workers": 1, "cores": (4096,)}, "cores"),
    ({"workers": 1, "worker_timeout": 0.0}, "worker-timeout"),
    ({"workers": 1, "exit_grace": -1.0}, "exit-grace"),
])
def test_bad_cores_and_timeouts_are_config_errors(tmp_path: Path, fields: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        Group(RunConfig(JOB, batch_size=32, ckpt_dir=tmp_path / "ckpt", **fields))
    assert err.value.field == field


def test_kill_from_a_signal_handler_is_bounded_and_idempotent(tmp_path: Path) -> None:
    """A hard kill from a signal handler (a live executor's second Ctrl-C) interrupts
    wait(); it reaps the workers without blocking, and repeating it is a no-op."""
    group = Group(RunConfig(JOB, workers=2, batch_size=64, ckpt_dir=tmp_path / "ckpt",
                            target=NEVER, timeout=60)).start()
    pids = group.pids
    old = signal.signal(signal.SIGALRM, lambda signum, frame: group.kill())
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        res = group.wait()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert res.status == "failed" and res.worker_exit_codes == [-signal.SIGKILL] * 2, res
    assert not any(pid_alive(p) for p in pids)
    t0 = time.monotonic()
    group.kill()
    group.kill()
    assert time.monotonic() - t0 < 0.5
    assert group.poll() is res


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""

