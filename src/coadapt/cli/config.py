"""Spec files: a command's options from a TOML file (``--config FILE``), and a
run's resolved options written back as one (``OUT/config.toml``).

A spec's keys are the command's long option names (dashes or underscores), and
each value goes through the option's own argparse action, type and choices, so
a file means exactly what the same flags would. Generic over the parser's
actions, never a list of today's flags. Standard library plus tomli_w (write
only): every ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NOT_IN_SPEC = frozenset({"config", "help"})
"""Options a spec file may not set: a spec does not include another."""

WRITE_SKIP = ("func", "command", "verbose", "config", "no_progress", "resume", "force")
"""Namespace entries ``write_config`` leaves out: how a run was driven, not what it computes."""


class ConfigError(ValueError):
    """A bad spec file: ``FILE:LINE: KEY: problem`` (line and key when known)."""

    def __init__(self, path: Path | str, line: int | None, key: str | None, problem: str) -> None:
        self.path, self.line, self.key, self.problem = str(path), line, key, problem
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {key}: {problem}" if key is not None else f"{where}: {problem}")


class SpecList(list):
    """A list option's value from a spec file, set as the parser's default.
    argparse's ``append`` copies the default before adding a flag's value; the
    copy of this list is empty, so a flag typed on the command line replaces the
    file's list instead of extending it (as it replaces a plain default's)."""

    def __copy__(self) -> list:
        return []


class _Bad(Exception):
    """A value's problem, before the caller adds the file, line and key."""


@dataclass(frozen=True)
class Setting:
    """One key of a spec file resolved to its option: the action, the parsed
    value, and the one argument text it came from (None for flags and lists)."""

    key: str
    line: int | None
    action: argparse.Action
    value: Any
    text: str | None


def option_name(key: str) -> str:
    """A spec key or long option in one spelling: dashes, no leading ``--``."""
    return key.strip().removeprefix("--").replace("_", "-")


def _settable(action: argparse.Action) -> bool:
    """Is ``action`` a setting (not --help or --version, whose default is SUPPRESS)?"""
    return action.dest != argparse.SUPPRESS and action.default != argparse.SUPPRESS


def _long_names(action: argparse.Action) -> list[str]:
    return [option_name(s) for s in action.option_strings if s.startswith("--")]


def _hidden(action: argparse.Action) -> bool:
    return action.help == argparse.SUPPRESS


def spec_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Each name a spec may use -> its action. A hidden option (an old spelling)
    that shares its dest with a visible one reads as the visible one."""
    settable = [a for a in parser._actions if _settable(a) and a.dest not in NOT_IN_SPEC]
    visible = {a.dest: a for a in reversed(settable) if not _hidden(a) and _long_names(a)}
    found: dict[str, argparse.Action] = {}
    for action in settable:
        target = visible.get(action.dest, action) if _hidden(action) else action
        for name in _long_names(action):
            found.setdefault(name, target)
    return found


def _visible_names(parser: argparse.ArgumentParser) -> list[str]:
    return [n for a in parser._actions if _settable(a) and not _hidden(a) and a.dest not in NOT_IN_SPEC
            for n in _long_names(a)]


def _accumulates(action: argparse.Action) -> bool:
    """Does each occurrence of the option add to its value (append, extend, or a
    custom action with a list default) rather than replace it (store: the last wins)?"""
    return isinstance(action, argparse._AppendAction) or (
        isinstance(action.default, list) and not isinstance(action, argparse._StoreAction))


def _number_type(action: argparse.Action) -> type | None:
    """int or float when the option's type parses numbers (a spec then needs a
    TOML number), else None (a string option)."""
    if action.type is None or not callable(action.type):
        return None
    for probe in ("1", "0", "100"):
        try:
            parsed = action.type(probe)
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
        if isinstance(parsed, bool) or not isinstance(parsed, int | float):
            return None
        return int if isinstance(parsed, int) else float
    return None


def _shown(value: Any) -> str:
    """A TOML value as a message shows it."""
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float | list):
        return json.dumps(value, default=str)
    return f"a {type(value).__name__}"


def _text(value: Any, number: type | None) -> str:
    """One scalar of a spec as the argument text a flag would carry."""
    if isinstance(value, dict):
        raise _Bad("a table is not an option; write top-level 'key = value' lines")
    if number is not None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Bad(f"expected {'an integer' if number is int else 'a number'}, got {_shown(value)}")
        if number is int and not isinstance(value, int):
            raise _Bad(f"expected an integer, got {_shown(value)}")
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value)
    raise _Bad(f"expected a string, got {_shown(value)}")


def _occurrences(action: argparse.Action, raw: Any) -> list[list[str]]:
    """The flag's occurrences a spec value stands for, each its argument texts."""
    if action.nargs == 0:  # a flag: true gives it once, false leaves the default
        if not isinstance(raw, bool):
            raise _Bad(f"expected true or false, got {_shown(raw)}")
        return [[]] if raw else []
    number = _number_type(action)
    items = raw if isinstance(raw, list) else [raw]
    texts = [_text(v, number) for v in items]
    if isinstance(raw, list) and action.nargs in (None, argparse.OPTIONAL):
        if _accumulates(action):
            return [[t] for t in texts]  # a repeatable option: once per item
        if number is not None:
            raise _Bad(f"expected {'an integer' if number is int else 'a number'}, got a list")
        return [[",".join(texts)]]  # a comma list in one argument (e.g. 1,10,100)
    return [texts]


def _resolve(parser: argparse.ArgumentParser, action: argparse.Action, raw: Any) -> tuple[Any, str | None]:
    """The value the command line would give ``action`` for the spec value ``raw``
    (its type, choices and the action itself run), and its one text if any."""
    occurrences = _occurrences(action, raw)
    scratch = argparse.Namespace()
    option = next(s for s in action.option_strings if s.startswith("--"))
    for texts in occurrences:
        try:
            values = parser._get_values(action, list(texts))
            action(parser, scratch, values, option)
        except argparse.ArgumentError as exc:
            raise _Bad(exc.message) from None
        except (argparse.ArgumentTypeError, ValueError, TypeError, KeyError) as exc:
            raise _Bad(str(exc).strip("'\"")) from None
    value = getattr(scratch, action.dest, action.default)
    if raw == [] and _accumulates(action):
        value = []  # an empty list, not the default
    if isinstance(value, list):
        value = list(value)  # plain: a list-building action's own marker class stays out of it
    one = occurrences[0][0] if len(occurrences) == 1 and len(occurrences[0]) == 1 else None
    return value, one


_KEY_LINE = re.compile(r"""^\s*(\[\[?)?\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*(=|\.|\])""")


def _key_lines(text: str) -> dict[str, int]:
    """The line (1-based) where each top-level key or table first appears
    (tomllib gives no positions): ``key =``, ``key.sub =``, ``[key]``, ``[[key]]``;
    lines inside multi-line strings, and keys inside tables, are not top-level."""
    lines: dict[str, int] = {}
    in_string, in_table = False, False
    for number, line in enumerate(text.splitlines(), start=1):
        quotes = line.count('"""') + line.count("'''")
        match = None if in_string else _KEY_LINE.match(line)
        in_string ^= quotes % 2 == 1
        if match is None or (in_table and not match.group(1)):
            continue
        in_table = in_table or bool(match.group(1))
        name = match.group(2)
        if name[0] in "\"'":
            name = next(iter(tomllib.loads(f"{name} = 0")))
        lines.setdefault(name, number)
    return lines


def _syntax_error(path: Path, exc: tomllib.TOMLDecodeError) -> ConfigError:
    message = str(exc)
    at = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if at is None:
        return ConfigError(path, None, None, f"not valid TOML: {message}")
    return ConfigError(path, int(at.group(1)), None,
                       f"not valid TOML: {message[:at.start()]} (column {at.group(2)})")


def read_config(path: Path | str, parser: argparse.ArgumentParser) -> list[Setting]:
    """Every key of the spec file at ``path`` resolved against ``parser``'s
    options, in file order; ConfigError names the file, line and key of the
    first bad one (unknown with the nearest valid name, wrong type, bad choice)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, None, None, f"cannot read it: {getattr(exc, 'strerror', None) or exc}") \
            from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, exc) from None
    lines = _key_lines(text)
    options = spec_options(parser)
    seen: dict[str, str] = {}
    settings: list[Setting] = []
    for key, raw in data.items():
        line = lines.get(key)
        name = option_name(key)
        if isinstance(raw, dict):
            raise ConfigError(path, line, key, "a table is not an option; write top-level "
                              "'key = value' lines")
        if name not in options:
            raise ConfigError(path, line, key, _unknown(name, parser))
        action = options[name]
        if action.dest in seen:
            raise ConfigError(path, line, key, f"the same option as '{seen[action.dest]}', set above")
        seen[action.dest] = key
        try:
            value, one = _resolve(parser, action, raw)
        except _Bad as exc:
            raise ConfigError(path, line, key, str(exc)) from None
        settings.append(Setting(key, line, action, value, one))
    return settings


def _unknown(name: str, parser: argparse.ArgumentParser) -> str:
    what = "not for a spec file (it cannot name another)" if name in NOT_IN_SPEC else "unknown option"
    near = difflib.get_close_matches(name, _visible_names(parser), n=1)
    if near:
        return f"{what}; did you mean '{near[0]}'?"
    return f"{what} of '{parser.prog}' (its --help lists them)"


def load_config(path: Path | str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The spec file's options as ``{dest: parsed value}``, as the command line
    would parse them (ConfigError for a bad file)."""
    return {s.action.dest: s.value for s in read_config(path, parser)}


def apply_config(parser: argparse.ArgumentParser, path: Path | str) -> None:
    """Make the spec file's options ``parser``'s defaults, so that a parse then
    gives the file's values and flags on the command line win. A value from the
    file counts as typed (a plain str/float, never the unset markers of
    ``runs.flags``), so a ``--preset`` keeps it. A repeatable option's list is a
    :class:`SpecList`: a flag replaces it rather than adding to it. A string a
    type parses is left as its text, which argparse converts once, as a flag's."""
    defaults: dict[str, Any] = {}
    for s in read_config(path, parser):
        if isinstance(s.value, str) and s.action.type is not None and s.text is not None:
            defaults[s.action.dest] = s.text
        elif isinstance(s.value, list) and _accumulates(s.action):
            defaults[s.action.dest] = SpecList(s.value)
        else:
            defaults[s.action.dest] = s.value
    parser.set_defaults(**defaults)


def _toml(action: argparse.Action, value: Any) -> Any:
    """An option's value as TOML that reads back to it: a flag as true/false,
    scalars as themselves (marker subclasses made plain), lists item by item."""
    if action.nargs == 0 and value in (action.const, action.default):
        return value == action.const
    if isinstance(value, list | tuple):
        return [_toml_scalar(v) for v in value]
    return _toml_scalar(value)


def _toml_scalar(value: Any) -> Any:
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str.__str__(value) if isinstance(value, str) else str(value)


def spec_of(args: argparse.Namespace, parser: argparse.ArgumentParser,
            skip: Iterable[str] = WRITE_SKIP) -> dict[str, Any]:
    """The options of ``args`` as a spec: every visible long option of ``parser``
    (not in ``skip``) with its value, in the parser's order. None is omitted
    (TOML has no null), and only where None is the option's default. ValueError
    names an option whose value would not read back the same."""
    skipped = set(skip) | NOT_IN_SPEC
    table: dict[str, Any] = {}
    done: set[str] = set()
    for action in parser._actions:
        names = _long_names(action)
        if not names or _hidden(action) or not _settable(action) or action.dest in skipped | done:
            continue
        done.add(action.dest)
        value = getattr(args, action.dest, action.default)
        if value is None:
            if action.default is not None:
                raise ValueError(f"--{names[0]}: None cannot be written to a spec file (TOML has "
                                 f"no null) and its default is {action.default!r}")
            continue
        table[names[0]] = written = _toml(action, value)
        try:
            back = _resolve(parser, action, written)[0]
        except _Bad as exc:
            back = f"an error: {exc}"
        if back != value:
            raise ValueError(f"--{names[0]}: {value!r} would read back from a spec file as {back!r}")
    return table


def write_config(path: Path | str, args: argparse.Namespace, parser: argparse.ArgumentParser, *,
                 skip: Iterable[str] = WRITE_SKIP) -> None:
    """Write the run's resolved options (a ``--preset`` filled in) to ``path`` as
    a spec file that ``--config`` reruns, atomically, under a header naming the
    command, coadapt's version and the command that reruns it."""
    import tomli_w

    from coadapt import __version__
    from coadapt.runs.flags import apply_preset
    from coadapt.util.atomic import atomic_write_text

    table = spec_of(apply_preset(args), parser, skip)
    header = (f"# The resolved options of a '{parser.prog}' run, written by coadapt {__version__}.\n"
              f"# Rerun it: {parser.prog} --config {path}   (flags given as well win; "
              "docs/spec-files.md)\n\n")
    atomic_write_text(path, header + tomli_w.dumps(table))
