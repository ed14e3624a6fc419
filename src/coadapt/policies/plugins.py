"""Policies from outside the package: a file, a module, an installed distribution.

``--policy path/to/file.py:Class`` or ``--policy package.module:Class`` names a
class implementing the ``Policy`` protocol (``name``, ``uses_oracle``,
``decide(snap)``, built as ``Class(config)``); an installed distribution
publishes one as an entry point in group ``coadapt.policies`` (``name =
"module:Class"``). Loading one registers it in ``REGISTRY`` under its ``name``
(role "plugin": runnable by name, listed by ``coadapt policies``, never one of
'all'), so the registry stays the one place names are resolved and results
are filed under that name. Entry points are read only when the names are
listed or a name is not registered, so startup stays fast. A worker process
loads the specs it is given (``PolicyConfig.plugins``) before it builds a policy.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

from coadapt.policies.base import (
    REGISTRY,
    Entry,
    Policy,
    PolicyConfig,
    PolicyOptions,
    add_entry,
    policy_names,
)
from coadapt.policies.options import Option, declared, parse_policy_args

GROUP = "coadapt.policies"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]*(_[A-Za-z0-9.+-]+)*")  # no '/', ':', '__'
_FORM = "expected path/to/file.py:Class or package.module:Class"


class UnknownPolicy(ValueError, KeyError):
    """A name no registered policy, plugin or entry point has (also a KeyError,
    as ``make_policy`` raised before plugins)."""

    __str__ = ValueError.__str__


def is_spec(text: str) -> bool:
    """Whether ``text`` names a class (``where:Class``) rather than a registered name."""
    return ":" in text


def _is_file(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where


def canonical(spec: str) -> str:
    """The spec with a file's path made absolute, so a worker in another folder
    (a Ray task) loads the same file; ValueError for a malformed spec."""
    where, sep, cls = spec.rpartition(":")
    if not sep or not where or not cls.isidentifier():
        raise ValueError(f"--policy {spec}: {_FORM}")
    if _is_file(where):
        return f"{Path(where).expanduser().resolve()}:{cls}"
    if not all(part.isidentifier() for part in where.split(".")):
        raise ValueError(f"--policy {spec}: {where!r} is neither a .py file nor a module; {_FORM}")
    return spec


def load(spec: str, *, source: str | None = None, expect: str | None = None) -> str:
    """Import the class ``spec`` names, check it, register it (once: loading the
    same spec again returns its name) and return its ``name``. ``source`` (an
    entry point's) replaces the file or module shown; ``expect``: the name the
    class must have (an entry point's). ValueError names the spec and what is wrong."""
    canon = canonical(spec)
    done = next((e.name for e in REGISTRY.values() if e.spec == canon), None)
    if done is not None:
        return _expected(done, expect, spec, source)
    where, _, cls_name = canon.rpartition(":")
    module, shown = _import_file(spec, Path(where)) if _is_file(where) else _import_module(spec, where)
    cls = getattr(module, cls_name, None)
    if not isinstance(cls, type):
        defined = sorted(n for n, v in vars(module).items()
                         if isinstance(v, type) and v.__module__ == module.__name__)
        close = difflib.get_close_matches(cls_name, defined, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ValueError(f"--policy {spec}: {shown} has no class {cls_name} (it defines: "
                         f"{', '.join(defined) or 'no classes'}){hint}")
    name = _expected(_check_class(spec, cls), expect, spec, source)
    taken = REGISTRY.get(name)
    if taken is not None:
        what = "the plugin" if taken.role == "plugin" else "the built-in policy"
        raise ValueError(f"--policy {spec}: its name {name!r} is taken by {what} {name} "
                         f"({taken.source}); give the class another name")
    add_entry(Entry(name, cls, "plugin", source or shown, spec=canon))
    return name


def _expected(name: str, expect: str | None, spec: str, source: str | None) -> str:
    if expect is not None and name != expect:
        raise ValueError(f"{source}: {spec} is the policy {name!r}; the entry point must "
                         f"carry the policy's name ({name} = \"{spec}\")")
    return name


def _module_name(path: Path) -> str:
    stem = re.sub(r"\W", "_", path.stem)
    return f"coadapt_plugin_{stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"


def _import_file(spec: str, path: Path) -> tuple[ModuleType, str]:
    if not path.is_file():
        raise ValueError(f"--policy {spec}: {path}: no such file" if not path.exists()
                         else f"--policy {spec}: {path} is not a file")
    name = _module_name(path)
    if name in sys.modules:
        return sys.modules[name], str(path)
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None:
        raise ValueError(f"--policy {spec}: {path} cannot be imported as Python")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module  # dataclasses and typing look classes' modules up there
    try:
        found.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error in the user's file, reported with its line
        del sys.modules[name]
        raise ValueError(f"--policy {spec}: importing {_where_failed(exc, path)}") from exc
    return module, str(path)


def _import_module(spec: str, where: str) -> tuple[ModuleType, str]:
    try:
        module = importlib.import_module(where)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (where == exc.name or where.startswith(exc.name + ".")):
            raise ValueError(f"--policy {spec}: no module named {exc.name!r} (is it installed, "
                             "or on PYTHONPATH?)") from exc
        raise ValueError(f"--policy {spec}: importing {_where_failed(exc, None)}") from exc
    except Exception as exc:  # noqa: BLE001 - any error in the user's module
        raise ValueError(f"--policy {spec}: importing {_where_failed(exc, None)}") from exc
    return module, f"{where} ({getattr(module, '__file__', None) or 'namespace'})"


def _where_failed(exc: BaseException, path: Path | None) -> str:
    """'FILE, line N: Error: message' from the traceback: the last frame in
    ``path`` (the user's line; None: the deepest frame outside importlib), and
    where it was raised when that is elsewhere."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen")]
    if isinstance(exc, SyntaxError) and exc.filename:
        frames.append(traceback.FrameSummary(exc.filename, exc.lineno or 0, "<module>"))
    mine = [f for f in frames if path is None or Path(f.filename) == path]
    what = f"{type(exc).__name__}: {exc}"
    if not mine:
        return f"{path}: {what}"
    at, deepest = mine[-1], frames[-1]
    raised = f" (raised in {deepest.filename}, line {deepest.lineno})" if deepest is not at else ""
    return f"{at.filename}, line {at.lineno}: {what}{raised}"


def _check_class(spec: str, cls: type) -> str:
    """The class's policy name, once it has what the engine needs."""
    missing = [a for a in ("name", "uses_oracle", "decide") if not hasattr(cls, a)]
    if missing:
        raise ValueError(f"--policy {spec}: class {cls.__name__} lacks {', '.join(missing)}: a "
                         "policy has class attributes name (str) and uses_oracle (bool) and a "
                         "method decide(snap) -> Decision (docs/writing-a-policy.md)")
    name, oracle = cls.name, cls.uses_oracle
    if not callable(cls.decide):
        raise ValueError(f"--policy {spec}: {cls.__name__}.decide must be a method decide(snap)")
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name == "all":
        raise ValueError(f"--policy {spec}: {cls.__name__}.name = {name!r}: a policy's name is "
                         "letters, digits and . + - _ (no '__'; not 'all'): it names folders")
    if not isinstance(oracle, bool):
        raise ValueError(f"--policy {spec}: {cls.__name__}.uses_oracle must be True or False")
    if oracle and "oracle" not in name:
        raise ValueError(f"--policy {spec}: {name!r} reads the truth (uses_oracle) but its name "
                         "does not say so; put 'oracle' in it")
    try:
        inspect.signature(cls).bind(PolicyConfig())
    except TypeError as exc:
        raise ValueError(f"--policy {spec}: {cls.__name__} must be built as "
                         f"{cls.__name__}(config): {exc}") from None
    except ValueError:
        pass  # no signature to inspect: trust it
    if hasattr(cls, "Options"):
        try:
            declared(cls.Options)
        except ValueError as exc:
            raise ValueError(f"--policy {spec}: {exc}") from None
    return name


def load_plugins(specs: Iterable[str]) -> list[str]:
    """Load every spec (see :func:`load`); their names, in order."""
    return [load(s) for s in specs]


@functools.cache
def load_entry_points() -> dict[str, str]:
    """Register the installed distributions' policies (group ``coadapt.policies``),
    once per process; returns, by entry-point name, why one could not be loaded
    (a broken distribution must not hide the others)."""
    import importlib.metadata  # here, not at import: most runs never read entry points

    errors: dict[str, str] = {}
    for ep in importlib.metadata.entry_points(group=GROUP):
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "unknown distribution"
        source = f"entry point {ep.name} ({dist})"
        try:
            load(ep.value, source=source, expect=ep.name)
        except ValueError as exc:
            errors[ep.name] = f"{source}: {exc}"
    return errors


def resolve(spec: str) -> str:
    """The registered name of ``spec``: a name, a plugin spec (loaded), or an
    installed entry point's name; UnknownPolicy names the nearest known one."""
    if spec in REGISTRY:
        return spec
    if is_spec(spec):
        return load(spec)
    broken = load_entry_points()
    if spec in REGISTRY:
        return spec
    if spec in broken:
        raise ValueError(f"--policy {spec}: {broken[spec]}")
    known = policy_names(variants=True, plugins=True)
    close = difflib.get_close_matches(spec, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownPolicy(f"unknown policy {spec!r}{hint}; known: {', '.join(known)}; or a file "
                        "'path/to/file.py:Class' or a module 'package.module:Class' ('coadapt "
                        "policies' lists them)")


def resolve_policies(specs: Sequence[str], *, oracles: bool = True) -> list[str]:
    """The names of ``--policy`` values, in order, once each: 'all' is the
    primary policies (without oracles unless ``oracles``); specs are loaded."""
    names: list[str] = []
    for spec in specs:
        found = policy_names(oracles=oracles) if spec == "all" else [resolve(spec)]
        names.extend(n for n in found if n not in names)
    if not names:
        raise ValueError("--policy: no policy given")
    return names


def make_policy(spec: str, config: PolicyConfig) -> Policy:
    """The policy ``spec`` names (a registered name, a plugin spec, an entry
    point's name), built with ``config``; ``config.plugins`` are loaded first
    when the name is not registered (a fresh worker process)."""
    if spec not in REGISTRY:
        load_plugins(config.plugins)
    return REGISTRY[resolve(spec)](config)


def plugin_specs(names: Iterable[str]) -> tuple[str, ...]:
    """The canonical specs of the plugins among ``names`` (what a worker process
    must load: ``PolicyConfig.plugins``, ``CellContext.plugins``)."""
    return tuple(REGISTRY[n].spec for n in names if n in REGISTRY and REGISTRY[n].role == "plugin")


def plugin_stamp(names: Iterable[str]) -> dict[str, str]:
    """Per plugin among ``names``, a hash of its class's source file, so an
    experiment's resume reruns the cells of an edited plugin."""
    out = {}
    for n in names:
        entry = REGISTRY.get(n)
        if entry is not None and entry.role == "plugin":
            path = inspect.getsourcefile(entry.cls)
            data = Path(path).read_bytes() if path else entry.spec.encode()
            out[n] = hashlib.sha256(data).hexdigest()[:16]
    return out


def options_of(name: str) -> list[Option]:
    """The options policy ``name`` declares, defaults as it is registered (a
    variant's switches replace its class's defaults)."""
    entry = REGISTRY[name]
    options = getattr(entry.cls, "Options", None)
    if options is None:
        return []
    switches = dict(entry.switches or ())
    return [Option(o.name, o.type, switches.get(o.name, o.default), o.help)
            for o in declared(options)]


def policy_options(args: Sequence[str], names: Sequence[str]) -> PolicyOptions:
    """``--policy-arg`` values for the chosen (registered) policies ``names``,
    typed and checked against what each declares, then each policy given
    options is built once with them, so its own checks run now, in the driver."""
    if not args:
        return ()
    parsed = parse_policy_args(args, names, {n: options_of(n) for n in names})
    config = PolicyConfig(options=parsed)
    for name, values in parsed:
        try:
            REGISTRY[name](config)
        except (ValueError, TypeError) as exc:
            shown = " ".join(f"{k}={v}" for k, v in values)
            raise ValueError(f"--policy-arg {name}: {shown}: {exc}") from None
    return parsed


def variant_of(entry: Entry) -> str | None:
    """The name of the policy ``entry`` is a variant of (None: not a variant)."""
    if entry.switches is None:
        return None
    return next((e.name for e in REGISTRY.values()
                 if e.cls is entry.cls and e.switches is None), entry.cls.__name__)


def description(entry: Entry) -> str:
    """One line on what ``entry`` does: a variant's switches, else the first line
    of its class's docstring (a dataclass's generated one skipped), else of its module's."""
    if entry.switches:
        shown = ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                          for k, v in entry.switches)
        return f"{variant_of(entry)} with {shown}"
    doc = inspect.getdoc(entry.cls) or ""
    if doc.startswith(f"{entry.cls.__name__}("):
        doc = ""
    if not doc:
        doc = inspect.getdoc(sys.modules.get(entry.cls.__module__)) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""
