"""Checking a complete launch: the verifier process, run by the group's parent.

When the workers report the target reached, the parent re-evaluates the final
checkpoint in a separate process (``python -m coadapt.jobs.verify``) on the
job's own cores, so a run's "complete" never rests on the training loop's own
metric alone. Its last stdout line is the JSON verdict; stderr goes to
``logs/verify.log``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from coadapt.jobs.launch import THREAD_ENV, WorkerRecipe
from coadapt.jobs.procs import helper_preexec


class Verification:
    """One running verifier; ``poll`` until ``running()`` is False, then ``outcome()``."""

    def __init__(self, ckpt_dir: Path, cores: tuple[int, ...] | None, log: IO[bytes],
                 recipe: WorkerRecipe | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coadapt.jobs.verify", str(ckpt_dir), "--json"],
            env={**os.environ, **THREAD_ENV, **(recipe.env if recipe else {})},
            stdout=subprocess.PIPE, stderr=log,
            stdin=subprocess.DEVNULL, preexec_fn=helper_preexec(cores, recipe.cgroup if recipe else None),
            start_new_session=True)  # a terminal's Ctrl-C is the parent's to handle
        self.started = time.monotonic()

    def running(self) -> bool:
        return self.proc.poll() is None

    def overdue(self, timeout: float) -> bool:
        """Still running ``timeout`` seconds after it started."""
        return time.monotonic() - self.started > timeout

    def outcome(self) -> tuple[bool, float | None, str]:
        """(verified, metric, message) of a verifier that has exited; an unreadable
        verdict is "not verified", with the exit code as the message."""
        out = self.proc.communicate()[0].decode().strip().splitlines()
        try:
            res = json.loads(out[-1])
            return bool(res["reached"]), float(res["metric"]), ""
        except (IndexError, ValueError, KeyError):
            return False, None, f"verify exited {self.proc.returncode}"
