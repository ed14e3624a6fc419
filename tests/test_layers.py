"""The layers (docs/architecture.md): no import cycle between packages or
between files, and the simulator imports no code that runs jobs. The layer
contracts themselves are import-linter's (``make lint``)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import coadapt

ROOT = Path(coadapt.__file__).parent


def package_graph() -> dict[str, set[str]]:
    """Package -> coadapt packages its modules import (the CLI excluded: it is on top)."""
    edges: dict[str, set[str]] = {}
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT).parts
        if len(rel) == 1 or rel[0] == "cli":
            continue
        pkg = rel[0]
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "coadapt" and len(parts) > 1 and parts[1] != pkg:
                    edges.setdefault(pkg, set()).add(parts[1])
    return edges


def test_packages_import_each_other_without_a_cycle():
    graph = package_graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def module_graph() -> dict[str, set[str]]:
    """Module -> coadapt modules it imports (TYPE_CHECKING and function-local
    imports included: a cycle there is still a cycle in the design)."""
    mods = {}
    for f in ROOT.rglob("*.py"):
        name = ".".join(("coadapt", *f.relative_to(ROOT).with_suffix("").parts))
        mods[name.removesuffix(".__init__")] = f
    graph: dict[str, set[str]] = {}
    for mod, f in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods
                         else node.module for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                while name and name not in mods:
                    name = name.rpartition(".")[0]
                if name and name != mod:
                    deps.add(name)
        graph[mod] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_files_import_each_other_without_a_cycle():
    """A backend hands its jobs a services object, never itself (and likewise
    everywhere): no two files import each other, however indirectly."""
    graph = module_graph()
    assert len(graph) > 100
    cycle = find_cycle(graph)
    assert cycle is None, "file-level import cycle: " + " -> ".join(cycle or [])
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_cycle_check_can_fail(monkeypatch):
    graph = {"a": {"b"}, "b": {"a"}}
    monkeypatch.setattr(sys.modules[__name__], "package_graph", lambda: graph)
    try:
        test_packages_import_each_other_without_a_cycle()
    except AssertionError as exc:
        assert "a -> b -> a" in str(exc)
    else:
        raise AssertionError("a two-package cycle went unnoticed")


def test_the_simulator_imports_no_code_that_runs_jobs():
    """Simulating (engine, policies, profiles, the modeled backend, the
    workload sets, the experiment) loads neither torch, the job runtime, the
    live backend nor the measuring tools."""
    code = (
        "import sys\n"
        "import coadapt.runs.simulate, coadapt.runs.fairness, coadapt.runs.options, coadapt.workloads.sets\n"
        "import coadapt.world.profiles.sources, coadapt.experiment.runner, coadapt.policies\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', "
        "'coadapt.backends.live', 'coadapt.tools', 'coadapt.jobs')))\n"
        "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the simulator imported: {out.stdout.strip()}"
