"""The docs say only what is true: every ``coadapt ...`` command in README.md and
docs/*.md parses with the CLI's own parser (without running), every ``make X``
names a Makefile target, every repository path they name exists, and every
command's ``--help`` answers and its examples parse too. Docs drift when options
are renamed; this fails the day they do.

``doc_checks()`` returns what was checked, for a count to quote:
``.venv/bin/python tests/test_docs.py`` prints it with every problem found.
"""

from __future__ import annotations

import argparse
import io
import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^\s*```")
INLINE = re.compile(r"(?<!`)`((?:[^`\n]|\n(?![ \t]*\n))+)`(?!`)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
COMMAND_PREFIXES = ("coadapt ", ".venv/bin/coadapt ", "make ")
PATH_ENDINGS = (".md", ".py", ".csv", ".toml", ".json")
PATH_CHARS = re.compile(r"^[\w.~+<>*{},/-]+$")
MADE = ("out/", "OUT/", "/tmp/", ".venv/")
"""Prefixes of paths the commands (or make) create: named in the docs, not checked."""
MADE_NAMES = frozenset({
    "events.jsonl", "jobs.csv", "summary.json", "comparison.csv", "report.md", "config.toml",
    "cells.jsonl", "results.csv", "summary.csv", "goals.csv", "failed.csv", "experiment.json",
    "live.json", "calibration.json", "control.json", "drift.csv", "netbench.csv", "network.json"})
"""Bare names of files a command writes into its OUT folder (named in the docs, not checked)."""
PACKAGE = REPO / "src" / "coadapt"
"""docs/architecture.md names modules below the package (``runs/live/run.py``)."""
SKIP_DIRS = frozenset({".git", ".venv", "out", "__pycache__", ".pytest_cache", ".ruff_cache"})
PLACEHOLDERS = ("path/to/",)
"""A path that stands for the reader's own (``path/to/file.py:Class``): not checked."""
OUTSIDE = "../shared/"
"""The reference data beside the repository: checked only where it is present."""


@dataclass(frozen=True)
class Check:
    """One thing the docs claim: where (FILE:LINE), the text, and what is wrong (None: true)."""

    source: str
    text: str
    problem: str | None = None


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def code_spans(text: str) -> Iterator[tuple[int, str]]:
    """(line, code) for each fenced line (continuations joined) and each inline
    `code` span (which, as in Markdown, may wrap within a paragraph), in order."""
    fenced, pending, start = False, "", 0
    prose: list[str] = []  # the text outside fences, fenced lines blanked (line numbers kept)
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced, pending = not fenced, ""
            prose.append("")
            continue
        prose.append("" if fenced else line)
        if not fenced:
            continue
        start = start if pending else number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        found.append((start, pending + line))
        pending = ""
    joined = "\n".join(prose)
    for m in INLINE.finditer(joined):
        found.append((joined.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())))
    return iter(sorted(found, key=lambda item: item[0]))


def commands_in(code: str) -> str | None:
    """The command a code span holds (a ``$ `` prompt dropped), or None."""
    text = code.strip().removeprefix("$ ").strip()
    words = text.split()
    if len(words) > 1 and words[1].endswith(":"):
        return None  # the CLI's output ("coadapt simulate: error: ..."), not a command
    return text if text.startswith(COMMAND_PREFIXES) else None


def make_targets() -> set[str]:
    targets: set[str] = set()
    for line in (REPO / "Makefile").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.%/-][A-Za-z0-9_.%/ -]*?)\s*::?(?!=)", line)
        if m:
            targets.update(m.group(1).split())
    return targets


def parse_problem(argv: list[str]) -> str | None:
    """Why ``coadapt ARGV`` does not parse (or uses a deprecated spelling), or None.
    The parser is built as ``coadapt.cli.main`` builds it; nothing runs."""
    from coadapt.cli import build_parser

    err = io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            build_parser(argv).parse_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            lines = err.getvalue().strip().splitlines()
            return lines[-1] if lines else f"exit {exc.code}"
    except Exception as exc:  # a command module that does not import, or a broken action
        return f"{type(exc).__name__}: {exc}"
    if "is deprecated" in err.getvalue():
        return err.getvalue().strip().splitlines()[-1]
    return None


SHELL_JOINS = frozenset({"&&", "||", ";", "|"})


def check_command(source: str, command: str, targets: set[str]) -> list[Check]:
    """One check per ``coadapt``/``make`` command of a shell line (``a && b`` is two;
    a trailing comment dropped)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError as exc:
        return [Check(source, command, f"not shell words: {exc}")]
    segments: list[list[str]] = [[]]
    for word in words:
        if word in SHELL_JOINS:
            segments.append([])
        else:
            segments[-1].append(word.removeprefix(".venv/bin/"))
    checks = []
    for seg in segments:
        if seg and seg[0] == "make":
            missing = [w for w in seg[1:] if "=" not in w and not w.startswith("-") and w not in targets]
            checks.append(Check(source, shlex.join(seg),
                                f"no Makefile target {', '.join(missing)}" if missing else None))
        elif seg and seg[0] == "coadapt":
            checks.append(Check(source, shlex.join(seg), parse_problem(seg[1:])))
    return checks


def path_tokens(code: str) -> Iterator[str]:
    """The words of a code span that look like paths (comma lists split, outside {a,b})."""
    for word in code.split():
        for part in re.split(r",(?![^{]*\})", word):
            token = _as_path(part)
            if token is not None:
                yield token


def _as_path(raw: str) -> str | None:
    """``raw`` as a path if it looks like one: it ends in a file suffix of PATH_ENDINGS,
    or it has a folder that exists or that the commands make (``Gbit/s`` does not)."""
    token = raw.strip("\"'`,;()[]").rstrip(".:")
    token = token.split("=", 1)[1] if "=" in token else token  # VAR=path, --option=path
    token = re.sub(r"^[a-z]+:(?=\.*/|\w+/)", "", token)  # adaptdl:DIR, sia:DIR, cpu:DIR
    token = re.sub(r"^(.+\.py):\w+$", r"\1", token)  # path/to/file.py:Class
    if not token or "://" in token or not PATH_CHARS.match(token) or token.startswith(PLACEHOLDERS):
        return None
    if token.endswith(PATH_ENDINGS):
        return token
    first = token.split("/", 1)[0]
    if "/" in token and (token.startswith(MADE + (OUTSIDE, "/")) or (first and (REPO / first).exists())):
        return token
    return None


def _globbed(base: Path, token: str) -> bool:
    """Does ``token`` name something below ``base``? Placeholders <x> and * match any
    name, {a,b} each alternative."""
    m = re.search(r"\{([^{}]*)\}", token)
    if m:
        return all(_globbed(base, token[:m.start()] + alt + token[m.end():])
                   for alt in m.group(1).split(","))
    pattern = re.sub(r"<[^<>/]*>", "*", token).rstrip("/")
    if pattern.startswith("/"):
        base, pattern = Path("/"), pattern.lstrip("/")
    if "*" in pattern:
        return any(base.glob(pattern))
    return (base / pattern).exists()


def repo_names() -> set[str]:
    """The names of the repository's files and folders (its outputs and caches left out)."""
    names: set[str] = set()
    todo = [REPO]
    while todo:
        for entry in todo.pop().iterdir():
            if entry.name not in SKIP_DIRS:
                names.add(entry.name)
                if entry.is_dir():
                    todo.append(entry)
    return names


def check_path(source: str, token: str, base: Path, names: set[str] | None = None) -> Check | None:
    """The check of one path (None: a path a command creates, or absent reference data).
    A path with a folder is relative to the repository (or, as architecture.md writes
    modules, to the package); a bare file name must be some file's in the repository."""
    if token.startswith(MADE) or token in MADE_NAMES:
        return None
    if token.startswith(OUTSIDE) and not (REPO / OUTSIDE).is_dir():
        return None
    if "/" not in token:
        found = token in (repo_names() if names is None else names)
    else:
        found = _globbed(base, token) or (base == REPO and _globbed(PACKAGE, token))
    return Check(source, token, None if found else "does not exist")


def doc_checks() -> tuple[list[Check], list[Check]]:
    """(commands, paths): every command and repository path in README.md and docs/*.md,
    each checked."""
    targets, names = make_targets(), repo_names()
    commands: list[Check] = []
    paths: list[Check] = []
    for doc in doc_files():
        text = doc.read_text(encoding="utf-8")
        name = doc.relative_to(REPO)
        for line, code in code_spans(text):
            source = f"{name}:{line}"
            command = commands_in(code)
            if command is not None:
                commands.extend(check_command(source, command, targets))
            found = (check_path(source, t, REPO, names) for t in path_tokens(code))
            paths.extend(c for c in found if c is not None)
        for number, line in enumerate(text.splitlines(), start=1):
            for m in LINK.finditer(line):
                target = m.group(1).split("#", 1)[0]
                if target and "://" not in target and not target.startswith("mailto:"):
                    paths.append(Check(f"{name}:{number}", target,
                                       None if _globbed(doc.parent, target) else "link target missing"))
    return commands, paths


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {}


def epilog_examples(epilog: str | None) -> list[str]:
    """The ``coadapt ...`` lines under an epilog's "examples" heading, continuations joined."""
    lines: list[str] = []
    inside, pending = False, ""
    for line in (epilog or "").splitlines():
        if line.lower().startswith("examples"):
            inside = True
            continue
        if inside and line and not line[0].isspace():
            inside = False
        if not inside:
            continue
        if pending or line.strip().startswith("coadapt "):
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            lines.append(" ".join((pending + line).split()))
            pending = ""
    return lines


def help_checks() -> list[Check]:
    """Every command's and subcommand's ``--help`` exits 0, and each example of its
    epilog parses."""
    from coadapt.cli import COMMANDS, EPILOG, build_parser, subparser

    checks = [c for ex in epilog_examples(EPILOG) for c in check_command("coadapt --help", ex, set())]
    for command in COMMANDS:
        try:
            parser = subparser(build_parser([command.name]), command.name)
        except Exception as exc:
            checks.append(Check(f"coadapt {command.name}", command.name, f"{type(exc).__name__}: {exc}"))
            continue
        todo = [((command.name,), parser)]
        while todo:
            path, p = todo.pop(0)
            where = "coadapt " + " ".join(path)
            checks.append(Check(where, f"{where} --help", parse_problem([*path, "--help"])))
            checks.extend(c for ex in epilog_examples(p.epilog)
                          for c in check_command(f"{where} --help", ex, set()))
            todo.extend(((*path, name), sub) for name, sub in _subparsers(p).items())
    return checks


def _failures(checks: list[Check]) -> str:
    return "\n".join(f"{c.source}: {c.text}\n    -> {c.problem}" for c in checks if c.problem)


# --- the extractor itself --------------------------------------------------------------------

SAMPLE = """\
Run `coadapt simulate --policy pollux` or `make simulate`; not `coadapt`, nor
`coadapt simulate: error: x`. A span may wrap: `coadapt report
out/sim`.

```sh
coadapt experiment --seeds 3 \\
    --out out/x       # a comment
make nothing-here
$ coadapt report out/sim
```
"""


def test_extractor_finds_inline_fenced_and_continued_commands():
    spans = [(line, commands_in(code)) for line, code in code_spans(SAMPLE)]
    assert [(line, c) for line, c in spans if c] == [
        (1, "coadapt simulate --policy pollux"), (1, "make simulate"), (2, "coadapt report out/sim"),
        (6, "coadapt experiment --seeds 3      --out out/x       # a comment"),
        (8, "make nothing-here"), (9, "coadapt report out/sim")]


def _one(command: str) -> Check:
    (check,) = check_command("x", command, make_targets())
    return check


def test_check_command_catches_bad_options_targets_and_old_spellings():
    assert {"simulate", "test", "live", "experiment"} <= make_targets()
    assert _one("make simulate POLICY=pollux").problem is None
    assert "nothing-here" in _one("make nothing-here").problem
    assert _one("coadapt report out/sim  # ok").problem is None
    assert _one(".venv/bin/coadapt report out/sim").text == "coadapt report out/sim"
    assert "--no-such-flag" in _one("coadapt report out/sim --no-such-flag").problem
    assert "deprecated" in _one("coadapt experiment --policies fixed").problem
    assert _one("coadapt report --help").problem is None
    both = check_command("x", "coadapt simulate --out out/a && coadapt report", set())
    assert [c.text for c in both] == ["coadapt simulate --out out/a", "coadapt report"]
    assert both[0].problem is None and "required" in both[1].problem


def test_path_tokens_and_their_checks():
    code = ("coadapt simulate --profiles adaptdl:../shared/reference/adaptdl --policy fixed,my/p.py:Mine "
            "traces/cpu-*.csv profiles/<type>/profile.json Gbit/s out/x.csv docs/nope.md "
            "path/to/file.py:Class OUT/comparison.{csv,parquet} runs/live/run.py jobs.csv loop.py")
    tokens = list(path_tokens(code))
    assert tokens == ["../shared/reference/adaptdl", "my/p.py", "traces/cpu-*.csv",
                      "profiles/<type>/profile.json", "out/x.csv", "docs/nope.md",
                      "OUT/comparison.{csv,parquet}", "runs/live/run.py", "jobs.csv", "loop.py"]
    checks = {t: check_path("x", t, REPO) for t in tokens}
    assert checks["out/x.csv"] is None and checks["jobs.csv"] is None  # made by a command
    assert checks["OUT/comparison.{csv,parquet}"] is None
    assert checks["traces/cpu-*.csv"].problem is None
    assert checks["profiles/<type>/profile.json"].problem is None
    assert checks["runs/live/run.py"].problem is None  # a module, named below the package
    assert checks["loop.py"].problem is None  # a bare name: some file's in the repository
    assert checks["docs/nope.md"].problem == "does not exist"
    assert checks["my/p.py"].problem == "does not exist"
    assert _globbed(REPO, "out-nowhere/{a,b}.csv") is False


def test_epilog_examples_are_collected_with_continuations():
    epilog = "examples:\n  coadapt simulate --out a \\\n      --seed 2   # x\n  coadapt report a\nNote.\n"
    assert epilog_examples(epilog) == ["coadapt simulate --out a --seed 2 # x", "coadapt report a"]


# --- the docs --------------------------------------------------------------------------------

def test_docs_commands_parse_and_make_targets_exist():
    bad = _failures(doc_checks()[0])
    assert not bad, "commands in the docs that do not parse:\n" + bad


def test_docs_paths_exist():
    bad = _failures(doc_checks()[1])
    assert not bad, "paths named in the docs that do not exist:\n" + bad


def test_every_help_answers_and_its_examples_parse():
    bad = _failures(help_checks())
    assert not bad, "--help or its examples:\n" + bad


def test_readme_is_a_short_guide_with_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150 and "make simulate" in text and "make test" in text


def test_docs_check_counts():
    commands, paths = doc_checks()
    helps = help_checks()
    sys.stdout.write(f"\ndocs: {len(commands)} commands and {len(paths)} paths checked; "
                     f"--help: {len(helps)} helps and examples checked\n")
    assert len(commands) >= 60 and len(paths) >= 60 and len(helps) >= 30


if __name__ == "__main__":  # the counts to quote, and every problem
    found = dict(zip(("commands", "paths"), doc_checks(), strict=True), help=help_checks())
    sys.stdout.write(", ".join(f"{len(v)} {k}" for k, v in found.items()) + " checked\n")
    sys.stdout.write("".join(f"{k}:\n{_failures(v)}\n" for k, v in found.items() if _failures(v)))
