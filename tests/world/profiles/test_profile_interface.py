import pytest
from toyprofile import make_toy, toy_step

from coadapt.world.profiles.profile import normalize_placement


def test_placement_rotation_normalizes():
    assert normalize_placement((2, 0, 1, 2)) == (1, 2, 2)
    assert normalize_placement((0, 4)) == (4,)


def test_measured_placements_interpolate_over_micro_batch():
    p = make_toy()
    st, sy = p.throughput((2,), 24)  # between measured 16 and 32: linear
    assert st == pytest.approx(toy_step(1, 2, 24)[0])
    assert sy == pytest.approx(toy_step(1, 2, 24)[1])


def test_unmeasured_placement_falls_back_to_interpolation_or_model():
    p = make_toy()
    st, _ = p.throughput((4, 4, 4), 32)  # 3 nodes, 12 replicas: never measured
    assert st > p.throughput((4,), 32)[0] > 0


def test_epochs_and_completion_follow_the_reference_rules():
    p = make_toy(epochs=10)
    assert list(p.epoch_progress[:3]) == [0.0, 100.0, 200.0]
    assert p.completion_epoch(64) == 9
    assert p.grad_stats(64, 3) == (1.0, 4.0)
    assert p.remaining_iterations(32, 0) == pytest.approx(p.iterations(32, 9) - p.iterations(32, 0))


def test_reference_profiles_load(reference_apps):
    apps = reference_apps
    assert set(apps) == {"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}
    c = apps["cifar10"]
    assert (c.limits.init_batch_size, c.limits.max_batch_size, c.num_epochs) == (128, 4096, 100)
    assert apps["yolov3"].limits.max_local_bsz == 8 and apps["ncf"].limits.max_replicas == 1


def test_target_profile_extends_a_run_stopped_early():
    import polars as pl

    from coadapt.world.profiles.profile import AppProfile

    base = make_toy(epochs=6)
    val = dict(base.validation)
    val[512] = val[512].head(3)  # stopped before the target
    val[32] = val[32].with_columns(pl.Series("metric", [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]))
    p = AppProfile(**{**{f: getattr(base, f) for f in (
        "name", "limits", "placements", "scalability", "source")}, "validation": val,
        "completion_epochs": None, "target": 0.9, "higher_is_better": True})
    assert p.completion_epoch(32) == 4  # 5th validation reaches 0.9
    # 512 stopped at 0.58 after 3 rows: extrapolated along log(progress) to 0.9.
    assert p.extrapolated_rows[512] > 3 and p.extrapolated_rows[32] == 0
    assert p.completion_epoch(512) > p.completion_epoch(32)
    assert p.num_epochs == 3 + p.extrapolated_rows[512]
    assert list(p.epoch_progress[:4]) == [0, 100, 200, 300]
