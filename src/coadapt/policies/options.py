"""Policy options: what a policy lets a run set (``--policy-arg [POLICY.]KEY=VALUE``).

A policy declares its options as a class attribute ``Options``: a frozen
dataclass whose fields are typed (int, float, bool, str, a ``Literal`` of
choices, or one of those ``| None``), each with a default and a
``metadata={"help": ...}``. Values arrive as text; they are typed and checked
here, once, in the driver, so a bad one ends the command before anything runs.
The result travels inside ``PolicyConfig.options`` (hashable, picklable): every
run path (simulate, live, an experiment worker, a Ray task) gets it with the
config it already passes. A built-in policy whose dataclass fields are its
options says so with :func:`with_options`.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass
from typing import Any, Literal

from coadapt.policies.base import PolicyOptions

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_NONE = ("none", "null")


@dataclass(frozen=True)
class Option:
    """One declared option, as ``coadapt policies`` lists it."""

    name: str
    type: Any  # the resolved annotation
    default: Any
    help: str

    @property
    def type_text(self) -> str:
        return type_text(self.type)


def _annotation(cls: type, f: dataclasses.Field) -> Any:
    """A field's annotation, resolved in its class's module (annotations are
    strings under ``from __future__ import annotations``)."""
    if not isinstance(f.type, str):
        return f.type
    module = sys.modules.get(cls.__module__)
    return eval(f.type, dict(vars(module)) if module else {}, dict(vars(cls)))  # noqa: S307


def declared(options_cls: type) -> list[Option]:
    """The options an ``Options`` dataclass declares; ValueError says what is wrong
    with it (not a dataclass, a field without a default, a type not supported)."""
    if not dataclasses.is_dataclass(options_cls):
        raise ValueError(f"{options_cls.__qualname__} must be a dataclass (its options)")
    out = []
    for f in dataclasses.fields(options_cls):
        where = f"{options_cls.__qualname__}.{f.name}"
        if f.default is MISSING and f.default_factory is MISSING:
            raise ValueError(f"{where}: an option needs a default")
        tp = _annotation(options_cls, f)
        _check_supported(tp, where)
        default = f.default if f.default is not MISSING else f.default_factory()
        out.append(Option(f.name, tp, default, str(f.metadata.get("help", ""))))
    return out


def _members(tp: Any) -> tuple[Any, ...]:
    """The types of a union (``float | None``), or the type itself."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _check_supported(tp: Any, where: str) -> None:
    for member in _members(tp):
        if member in (int, float, bool, str, type(None)) or typing.get_origin(member) is Literal:
            continue
        raise ValueError(f"{where}: type {type_text(tp)} is not supported for an option "
                         "(use int, float, bool, str, Literal[...], or one of them | None)")


def type_text(tp: Any) -> str:
    parts = []
    for member in _members(tp):
        if typing.get_origin(member) is Literal:
            parts.append("{" + ",".join(str(c) for c in typing.get_args(member)) + "}")
        else:
            parts.append("None" if member is type(None) else getattr(member, "__name__", str(member)))
    return " | ".join(parts)


def parse_value(text: str, tp: Any) -> Any:
    """``text`` as a value of ``tp``; ValueError says what was expected."""
    members = _members(tp)
    if type(None) in members and text.strip().lower() in _NONE:
        return None
    for member in members:
        value = _as(text.strip(), member)
        if value is not _NO:
            return value
    raise ValueError(f"expected {_expected(tp)}, got {text!r}")


_NO = object()


def _as(text: str, tp: Any) -> Any:
    if typing.get_origin(tp) is Literal:
        return next((c for c in typing.get_args(tp) if str(c) == text), _NO)
    if tp is bool:
        low = text.lower()
        return True if low in _TRUE else False if low in _FALSE else _NO
    if tp is int:
        try:
            return int(text)
        except ValueError:
            return _NO
    if tp is float:
        try:
            x = float(text)
        except ValueError:
            return _NO
        return x if math.isfinite(x) else _NO
    return text if tp is str else _NO


def _expected(tp: Any) -> str:
    words = {int: "an integer", float: "a finite number", bool: "true or false", str: "text",
             type(None): "none"}
    return " or ".join(f"one of {', '.join(str(c) for c in typing.get_args(m))}"
                       if typing.get_origin(m) is Literal else words[m] for m in _members(tp))


def with_options(**helps: str) -> Callable[[type], type]:
    """Class decorator for a built-in dataclass policy whose fields ``helps``
    names are its options: sets ``cls.Options`` (a frozen dataclass with those
    fields' types and defaults, and the help given). The policy applies the
    values set for it with :func:`apply_options` in its ``__post_init__``."""
    def make(cls: type) -> type:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        spec = [(name, _annotation(cls, fields[name]),
                 dataclasses.field(default=fields[name].default, metadata={"help": text}))
                for name, text in helps.items()]
        opts = dataclasses.make_dataclass("Options", spec, frozen=True)
        opts.__qualname__ = f"{cls.__qualname__}.Options"
        opts.__module__ = cls.__module__
        opts.__doc__ = f"The options of {cls.__qualname__} (--policy-arg)."
        cls.Options = opts
        return cls
    return make


def apply_options(policy: Any) -> None:
    """Set the fields of a :func:`with_options` policy to the values its config
    carries for its name; the others keep theirs (a variant's switches, defaults)."""
    for key, value in policy.config.given_options(policy.name).items():
        setattr(policy, key, value)


def parse_policy_args(args: Sequence[str], names: Sequence[str],
                      declared_by: Mapping[str, Sequence[Option]]) -> PolicyOptions:
    """``--policy-arg [POLICY.]KEY=VALUE`` values for the chosen policies ``names``
    (``declared_by``: each one's options), typed and checked: a key without
    POLICY. sets it on every chosen policy that declares it. Later values win.
    ValueError names the argument, the policy and, for a key it lacks, its
    options and the nearest one."""
    values: dict[str, dict[str, Any]] = {}
    for arg in args:
        lhs, eq, text = arg.partition("=")
        scope, _, key = lhs.strip().rpartition(".")
        if not eq or not key:
            raise ValueError(f"--policy-arg {arg!r}: expected [POLICY.]KEY=VALUE, e.g. "
                             "pollux.p=-0.5")
        if scope and scope not in names:
            raise ValueError(f"--policy-arg {arg}: {scope!r} is not among the chosen policies "
                             f"({', '.join(names)})")
        targets = [scope] if scope else [n for n in names
                                          if any(o.name == key for o in declared_by[n])]
        if not targets:
            every = sorted({o.name for n in names for o in declared_by[n]})
            raise ValueError(f"--policy-arg {arg}: none of the chosen policies "
                             f"({', '.join(names)}) has an option {key!r}{_nearest(key, every)}")
        for name in targets:
            option = _option(arg, name, key, declared_by[name])
            try:
                values.setdefault(name, {})[key] = parse_value(text, option.type)
            except ValueError as exc:
                raise ValueError(f"--policy-arg {arg}: {name}'s option {key} "
                                 f"({option.type_text}): {exc}") from None
    return tuple((n, tuple(sorted(kv.items()))) for n, kv in sorted(values.items()))


def _option(arg: str, name: str, key: str, options: Sequence[Option]) -> Option:
    found = next((o for o in options if o.name == key), None)
    if found is None:
        known = [o.name for o in options]
        have = f"; its options: {', '.join(known)}" if known else "; it declares no options"
        raise ValueError(f"--policy-arg {arg}: {name} has no option {key!r}"
                         f"{_nearest(key, known)}{have}")
    return found


def _nearest(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
