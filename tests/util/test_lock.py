"""A run owns its output folder: a second run into it is refused, naming the holder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from coadapt.cli import main
from coadapt.util.lock import FolderBusy, own_folder


def test_a_second_claim_is_refused_and_names_the_holder(tmp_path):
    with own_folder(tmp_path / "out", "simulate"):
        with pytest.raises(FolderBusy, match=rf"in use by 'coadapt simulate' \(pid {os.getpid()}"):
            with own_folder(tmp_path / "out", "experiment"):
                pass
    with own_folder(tmp_path / "out", "experiment"):  # released at the end of the first
        pass


def test_a_killed_holder_leaves_the_folder_free(tmp_path):
    code = ("import sys, time; from pathlib import Path; from coadapt.util.lock import own_folder\n"
            f"with own_folder(Path({str(tmp_path / 'out')!r}), 'simulate'):\n"
            "    print('held', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(FolderBusy, match=f"pid {holder.pid}"):
            with own_folder(tmp_path / "out", "simulate"):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with own_folder(tmp_path / "out", "simulate"):
        pass


def test_simulate_into_a_busy_folder_exits_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    with own_folder(out, "experiment"):
        code = main(["simulate", "--policy", "fixed", "--out", str(out), "--no-progress"])
    assert code == 2 and "in use by 'coadapt experiment'" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == [".coadapt.lock"]
