"""The atomic checkpoint writer never leaves a partial or temp file behind."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from coadapt.jobs.checkpoint import (
    TMP_PREFIX,
    atomic_save,
    atomic_write_bytes,
    remove_stale_temps,
)


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot serialise")


def test_atomic_save_roundtrip(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.pt"
    size = atomic_save({"w": torch.arange(4.0), "step": 3}, path)
    assert path.stat().st_size == size
    back = torch.load(path, weights_only=True)
    assert back["step"] == 3 and torch.equal(back["w"], torch.arange(4.0))
    assert list(tmp_path.iterdir()) == [path]


def test_failed_serialisation_keeps_old_file(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.pt"
    atomic_save({"step": 1}, path)
    old = path.read_bytes()
    with pytest.raises(RuntimeError, match="cannot serialise"):
        atomic_save({"step": 2, "bad": _Unpicklable()}, path)
    assert path.read_bytes() == old
    assert list(tmp_path.iterdir()) == [path]


def test_failed_write_removes_temp_and_keeps_old(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    atomic_write_bytes(path, b"old")
    # a non-bytes payload makes the write itself fail after the temp file exists
    with pytest.raises(TypeError):
        atomic_write_bytes(path, object())  # type: ignore[arg-type]
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin"]


def test_stale_temps_are_removed(tmp_path: Path) -> None:
    stale = tmp_path / f"{TMP_PREFIX}ckpt.pt.abc"
    stale.write_bytes(b"partial")
    keep = tmp_path / "ckpt.pt"
    keep.write_bytes(b"x")
    assert remove_stale_temps(tmp_path) == [stale]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


@pytest.mark.parametrize("damage", ["truncate", "random", "not-a-dict"])
def test_a_damaged_checkpoint_is_refused_naming_it(tmp_path: Path, damage: str, capsys) -> None:
    from coadapt.jobs.checkpoint import CheckpointError, load_checkpoint
    from coadapt.jobs.verify import main as verify_main

    path = tmp_path / "ckpt.pt"
    torch.save({"job_type": "mlp-mnist1d", "w": torch.zeros(1000)}, path)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "random":
        path.write_bytes(bytes(range(256)) * 20)
    else:
        torch.save([1, 2, 3], path)
    with pytest.raises(CheckpointError, match=rf"^{path}: not a (readable|coadapt) checkpoint"):
        load_checkpoint(tmp_path)
    assert verify_main([str(tmp_path)]) == 2  # bad input, not "target not reached" (1)
    assert capsys.readouterr().err.startswith(f"coadapt job verify: error: {path}: not a")
