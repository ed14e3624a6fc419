"""A run's measured speed against the simulator's truth."""

from toyprofile import make_toy, toy_step

from coadapt.eventlog import EventLog
from coadapt.runs.live.speed import observed_speed


def test_speed_is_the_median_ratio_of_steady_steps(tmp_path):
    prof = {"toy": make_toy()}
    job = tmp_path / "jobs" / "j"
    with EventLog(job / "events.jsonl") as log:
        for run_step in range(1, 21):
            # warm-up steps are far slower and must not count
            slow = 10.0 if run_step <= 3 else (1.5 if run_step % 2 else 1.6)
            step, _ = toy_step(1, 1, 32)
            log.emit(run_step, "observation", "j", run_step=run_step, workers=1, local_bsz=32,
                     accum_steps=0, step_time=step * slow)
        log.emit(30, "validation", "j", metric=0.5)
    speed = observed_speed(tmp_path, prof, {"j": "toy", "missing": "toy"})
    assert abs(speed["toy"] - 1.6) < 1e-9  # 17 steady steps: 8 at 1.5, 9 at 1.6
    assert set(speed) == {"toy"}
