"""The Sia artifact's per-GPU-type profiles, read from the reference data at run
time (skipped where it is absent)."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from coadapt.world.cluster import ClusterSpec
from coadapt.world.profiles.profile import AppProfile, ProfileError
from coadapt.world.profiles.sia import (
    SOSP23_CLUSTER,
    SOSP23_RESCALE_S,
    SOSP23_RESTART_S,
    SOSP23_STEP_SCALE,
    load_sia,
    scale_steps,
)
from coadapt.world.profiles.sources import load_profiles
from coadapt.world.world import World

SIA = Path(os.environ.get(
    "COADAPT_SIA_REFERENCE", Path(__file__).resolve().parents[3] / "../shared/reference/sia"))
KINDS = {"aws", "azure", "dgx", "dgx-ext", "quad", "rtx"}


@pytest.fixture(scope="module")
def sia_dir() -> Path:
    if not (SIA / "traces").is_dir():
        pytest.skip(f"Sia reference data not found at {SIA}")
    return SIA


@pytest.fixture(scope="module")
def sia_apps(sia_dir: Path) -> dict[str, AppProfile]:
    return load_sia(sia_dir)


def test_every_model_has_its_gpu_types_and_shares_validation(sia_apps):
    assert set(sia_apps) == {"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}
    c = sia_apps["cifar10"]
    assert set(c.by_kind) == KINDS
    assert c.source.startswith("sia:") and c.source.endswith("cifar10")
    for kind in c.by_kind.values():
        assert kind.validation is c.validation and kind.limits == c.limits
        assert kind.completion_epochs == c.completion_epochs == 100
        assert not kind.by_kind
    assert (c.limits.init_batch_size, c.limits.max_batch_size) == (128, 4096)


def test_reference_tables_read_as_the_adaptdl_loader_does(sia_dir, sia_apps):
    from coadapt.world.profiles.adaptdl import load_adaptdl_app

    for name, prof in sia_apps.items():
        ref = load_adaptdl_app(sia_dir / "traces" / name)
        assert prof.limits == ref.limits and prof.placements.equals(ref.placements)
        assert prof.scalability is not None and prof.scalability.equals(ref.scalability)


def test_a100_is_faster_than_t4_on_cifar10(sia_apps):
    kinds = sia_apps["cifar10"].by_kind
    for micro in (32, 128, 512):
        fast, slow = kinds["dgx-ext"].throughput((1,), micro), kinds["aws"].throughput((1,), micro)
        assert fast[0] < slow[0]
    # Measured: 0.0387 s (A100) against 0.1031 s (T4) per step of 128 samples.
    assert kinds["dgx-ext"].throughput((1,), 128)[0] == pytest.approx(0.03867, rel=1e-3)
    assert kinds["aws"].throughput((1,), 128)[0] == pytest.approx(0.10312, rel=1e-3)


def test_pipeline_model_is_skipped_with_a_warning(sia_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="coadapt.world.profiles.sia"):
        apps = load_sia(sia_dir / "traces")
    assert "gpt_pmp" not in apps
    assert "gpt_pmp: skipped" in caplog.text


def test_scale_steps_multiplies_every_table(sia_apps):
    scaled = scale_steps(sia_apps, SOSP23_STEP_SCALE)
    c, s = sia_apps["cifar10"], scaled["cifar10"]
    for prof, copy in [(c, s), *((c.by_kind[k], s.by_kind[k]) for k in KINDS)]:
        for col in ("step_time", "sync_time"):
            assert (copy.placements[col] / prof.placements[col]).to_list() == \
                pytest.approx([1.8] * prof.placements.height)
            assert (copy.scalability[col] / prof.scalability[col]).to_list() == \
                pytest.approx([1.8] * prof.scalability.height)
        assert copy.throughput((1,), 128)[0] == pytest.approx(1.8 * prof.throughput((1,), 128)[0])
    assert s.validation is c.validation
    assert scaled["imagenet"].placements["step_time"][0] == pytest.approx(
        1.2 * sia_apps["imagenet"].placements["step_time"][0])
    assert scale_steps(sia_apps, {})["bert"].placements.equals(sia_apps["bert"].placements)


def test_malformed_kind_table_names_file_line_and_field(sia_dir, tmp_path):
    folder = tmp_path / "traces" / "cifar10"
    shutil.copytree(sia_dir / "traces" / "cifar10", folder)
    path = folder / "placements-dgx.csv"
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[2].split(",")
    row[header.index("step_time")] = "fast"
    lines[2] = ",".join(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ProfileError, match=r"placements-dgx\.csv:3: field 'step_time'.*'fast'"):
        load_sia(tmp_path)


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ProfileError, match=r"/nonexistent: profile folder not found.*sia:PATH"):
        load_profiles("sia:/nonexistent")
    with pytest.raises(ProfileError, match="no model folders with placements.csv"):
        load_sia(tmp_path)


def test_world_on_the_study_cluster(sia_dir):
    apps = load_profiles(f"sia:{sia_dir}")
    assert set(apps["bert"].by_kind) == KINDS
    assert set(SOSP23_STEP_SCALE) == set(SOSP23_RESTART_S) == set(SOSP23_RESCALE_S) \
        == set(apps) | {"gpt_pmp"}
    cluster = ClusterSpec.parse(SOSP23_CLUSTER)
    speed = World.build(apps, cluster).kind_speed()["cifar10"]
    assert set(speed) == {"aws", "rtx", "dgx-ext"}
    assert speed["dgx-ext"] > speed["rtx"] > speed["aws"]
    slow = World.build(scale_steps(apps, SOSP23_STEP_SCALE), cluster).kind_speed()["cifar10"]
    assert slow["aws"] == pytest.approx(speed["aws"] / 1.8)
