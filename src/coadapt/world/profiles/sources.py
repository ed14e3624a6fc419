"""Where profiles come from: ``SCHEME:PATH`` specs, one registry.

``adaptdl:DIR`` reads the Pollux paper's GPU traces; ``sia:DIR`` the Sia paper's,
with one step table per GPU type; ``cpu:DIR`` (or a bare ``DIR``) reads profiles
measured by ``coadapt profile``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from coadapt.world.profiles.profile import AppProfile, ProfileError


def _adaptdl(path: Path) -> dict[str, AppProfile]:
    from coadapt.world.profiles.adaptdl import load_adaptdl

    return load_adaptdl(path)


def _sia(path: Path) -> dict[str, AppProfile]:
    from coadapt.world.profiles.sia import load_sia

    return load_sia(path)


def _cpu(path: Path) -> dict[str, AppProfile]:
    from coadapt.world.profiles.cpu_format import load_cpu_profiles

    return load_cpu_profiles(path)


LOADERS: dict[str, Callable[[Path], dict[str, AppProfile]]] = {
    "adaptdl": _adaptdl, "sia": _sia, "cpu": _cpu}


def load_profiles(spec: str) -> dict[str, AppProfile]:
    """Profiles for every job type found at ``spec``."""
    scheme, sep, rest = spec.partition(":")
    if not sep or scheme not in LOADERS:
        scheme, rest = "cpu", spec
    path = Path(rest)
    try:
        exists = path.exists()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise ProfileError(f"{path}: not a usable path ({exc})") from None
    if not exists:
        raise ProfileError(
            f"{path}: profile folder not found. Use adaptdl:PATH for the Pollux reference traces, "
            f"sia:PATH for the Sia reference traces (one table per GPU type), "
            f"or run 'make profile' to measure CPU profiles into profiles/"
        )
    return LOADERS[scheme](path)
