"""The output-folder rule: claimed only when empty, --resume or --force;
foreign files never deleted; results staged and renamed into place."""

from __future__ import annotations

from pathlib import Path

import pytest

from coadapt.util.outdir import (
    PARTIAL,
    FolderHeld,
    Ownership,
    check_out_path,
    claim,
    staged,
    unfinished,
)


def a_run(out: Path) -> None:
    (out / "fixed").mkdir(parents=True)
    (out / "fixed" / "events.jsonl").write_text("{}\n")
    (out / "config.toml").write_text("x = 1\n")


def test_a_new_or_empty_folder_is_taken(tmp_path: Path) -> None:
    with claim(tmp_path / "new", "simulate") as out:
        assert out.is_dir()
    (tmp_path / "empty").mkdir()
    with claim(tmp_path / "empty", "simulate"):
        pass


def test_a_folder_with_results_is_refused_and_untouched(tmp_path: Path) -> None:
    a_run(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(FolderHeld, match=r"earlier run's results \(config.toml, fixed\).*--force.*--resume"):
        with claim(tmp_path, "simulate"):
            pass
    assert sorted(p.name for p in tmp_path.rglob("*") if p.name != ".coadapt.lock") == before


def test_force_replaces_and_resume_keeps(tmp_path: Path) -> None:
    a_run(tmp_path)
    with claim(tmp_path, "experiment", Ownership(resume=True)):
        assert (tmp_path / "fixed" / "events.jsonl").exists()
    with claim(tmp_path, "experiment", Ownership(force=True)):
        assert sorted(p.name for p in tmp_path.iterdir()) == [".coadapt.lock"]


def test_foreign_files_are_never_deleted(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    for how in (Ownership(force=True), Ownership(resume=True), Ownership()):
        with pytest.raises(FolderHeld, match="coadapt did not write"):
            with claim(tmp_path, "simulate", how):
                pass
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_bad_combinations_and_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="choose one"):
        with claim(tmp_path / "o", "simulate", Ownership(force=True, resume=True)):
            pass
    with pytest.raises(ValueError, match="cannot resume"):
        with claim(tmp_path / "o", "netbench", Ownership(resume=True), resumable=False):
            pass
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="is a file"):
        check_out_path(tmp_path / "f")
    with pytest.raises(ValueError, match="which is a file"):
        check_out_path(tmp_path / "f" / "sub")
    assert not (tmp_path / "o").exists()


def test_staged_results_appear_only_when_complete(tmp_path: Path) -> None:
    with staged(tmp_path / "pollux") as tmp:
        (tmp / "events.jsonl").write_text("{}\n")
        assert not (tmp_path / "pollux").exists() and unfinished(tmp_path) == ["pollux"]
    assert (tmp_path / "pollux" / "events.jsonl").exists() and not (tmp_path / PARTIAL).exists()
    with pytest.raises(RuntimeError):
        with staged(tmp_path / "sia") as tmp:
            (tmp / "events.jsonl").write_text("{}\n")
            raise RuntimeError("killed")
    assert unfinished(tmp_path) == ["sia"] and not (tmp_path / "sia").exists()
    with staged(tmp_path / "sia"):  # a rerun starts it afresh
        pass
    assert unfinished(tmp_path) == []
