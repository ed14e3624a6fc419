"""``coadapt job`` commands: bad input exits 2 naming the field, list prints a table."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobtest_helpers import JOB

from coadapt.jobs.__main__ import main
from coadapt.jobs.registry import JOB_TYPES


@pytest.mark.parametrize(("argv", "field"), [
    (["run", "no-such-type", "--ckpt", "X"], "type"),
    (["run", JOB, "--ckpt", "X", "--workers", "0"], "workers"),
    (["run", JOB, "--ckpt", "X", "--batch", "513"], "batch"),
    (["run", JOB, "--ckpt", "X", "--workers", "8", "--batch", "8"], "batch"),
    (["run", JOB, "--ckpt", "X", "--max-steps", "0"], "max-steps"),
    (["run", JOB, "--ckpt", "X", "--eval-every", "-1"], "eval-every"),
    (["run", JOB, "--ckpt", "X", "--time-limit", "0"], "time-limit"),
    (["verify", "X"], "ckpt_dir"),
])
def test_bad_input_exits_2_naming_the_field(argv: list[str], field: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(tmp_path / "ckpt") if a == "X" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"error: {field}:" in err


def test_unparseable_number_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", JOB, "--ckpt", "X", "--workers", "two"])
    assert exc.value.code == 2
    assert "--workers" in capsys.readouterr().err


def test_existing_checkpoint_needs_resume(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ckpt.pt").write_bytes(b"")
    assert main(["run", JOB, "--ckpt", str(tmp_path)]) == 2
    assert "--resume" in capsys.readouterr().err


def test_list_shows_every_type(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in JOB_TYPES:
        assert name in out
    assert out.splitlines()[0].split()[:3] == ["type", "family", "M0"]
