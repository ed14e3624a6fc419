"""Cells as Ray tasks, for grids bigger than one machine (optional extra ``ray``).

``local`` starts a private Ray instance on this machine with ``jobs`` CPUs;
any other address joins that cluster. The context (profiles, costs, CSV
workloads) is put into the object store once, so remote nodes need only the
``coadapt`` package, not this checkout's files; each node must run the same
coadapt version as the driver (rows are filed under the driver's code
fingerprint). Policies from outside the package travel as their specs in the
context (``CellContext.plugins``) and each task loads them: a file by its
absolute path, which must exist on every node; a module or an entry point,
which must be installed there. Results are yielded as tasks
finish; leaving early cancels what is still queued or running.

The runner hands in the function that runs one cell, so this module needs
nothing of the runner (which imports it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from coadapt.experiment.grid import Cell

INSTALL_HINT = "Ray is an optional extra: pip install 'coadapt[ray]' (or pip install ray)"


class RayUnavailable(RuntimeError):
    pass


class RayPool:
    def __init__(self, address: str, jobs: int) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RayUnavailable(INSTALL_HINT) from exc
        self.ray = ray
        self.address = address
        self.jobs = jobs
        self._pending: list[Any] = []

    def __enter__(self) -> RayPool:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "configure_logging": False}
        if self.address == "local":
            self.ray.init(num_cpus=max(self.jobs, 1), **kwargs)
        else:
            self.ray.init(address=self.address, **kwargs)
        return self

    def results(self, cells: Sequence[Cell], ctx: Any,
                run: Callable[[Any, Cell], tuple]) -> Iterator[tuple]:
        """``run(ctx, cell)`` of every cell as a task, yielded as each finishes;
        ``run`` returns ``(cell, row, blob)``; a module-level function, so
        the workers import it rather than receive its code."""
        task = self.ray.remote(num_cpus=1, max_retries=0)(run)
        ref = self.ray.put(ctx)
        cell_of = {}
        for cell in cells:
            cell_of[task.remote(ref, cell)] = cell
        self._pending = list(cell_of)
        while self._pending:
            ready, self._pending = self.ray.wait(self._pending, num_returns=1)
            try:
                yield self.ray.get(ready[0])
            except self.ray.exceptions.RayError as exc:  # a dead worker, a node lost, ...
                yield cell_of[ready[0]], None, f"Ray task failed: {exc}"

    def __exit__(self, *exc: object) -> None:
        for ref in self._pending:
            self.ray.cancel(ref, force=True)
        self.ray.shutdown()
