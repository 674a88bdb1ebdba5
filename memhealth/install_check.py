"""Are the top-level packages `memory_core`, `probes` and `telemetry` memhealth's own?

They are top-level names (the layout the design card asks for), and `telemetry` is also the
name of an unrelated distribution on the package index that installs a top-level
`telemetry/`. Installed into a shared environment, whichever comes first on sys.path wins,
and memhealth would run someone else's code under its own name. The CLI checks before any
command imports them, using import specs only (nothing is imported):

    foreign_packages()   # [] when all three sit beside memhealth/, else [(name, origin)]
"""

from __future__ import annotations

import os

OWN_PACKAGES = ("memory_core", "probes", "telemetry")
FIX = ("install memhealth in an environment of its own: `pipx install /path/to/memhealth` or "
       "`uv tool install /path/to/memhealth` (docs/getting-started.md: Use it in a project)")


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def foreign_packages() -> list[tuple[str, str]]:
    """(name, what answers to it) for each of OWN_PACKAGES not installed beside memhealth."""
    import importlib.util

    import memhealth

    home = os.path.dirname(os.path.dirname(_real(memhealth.__file__)))
    out = []
    for name in OWN_PACKAGES:
        spec = importlib.util.find_spec(name)
        origin = getattr(spec, "origin", None) if spec is not None else None
        if not origin or _real(os.path.dirname(origin)) != os.path.join(home, name):
            out.append((name, origin or "nothing (not installed)"))
    return out


def _owners(name: str) -> list[str]:
    """Distributions that install a top-level `name` (the failure path only: this is slow)."""
    try:
        from importlib.metadata import packages_distributions

        return sorted(set(packages_distributions().get(name, [])) - {"memhealth"})
    except Exception:  # broken metadata of a foreign distribution must not hide the finding
        return []


def detail(foreign: list[tuple[str, str]]) -> str:
    """One line naming what shadows which package."""
    parts = []
    for name, origin in foreign:
        owners = _owners(name)
        by = f" (from {', '.join(owners)})" if owners else ""
        parts.append(f"`{name}` is {origin}{by}")
    return ("memhealth's top-level packages are shadowed by another installation: "
            + "; ".join(parts))


def verdict_text(foreign: list[tuple[str, str]]) -> str:
    """The gate's verdict when the install itself is wrong (no check can be trusted)."""
    return f"MEMORY-HEALTH: 0/1 GREEN (1 RED)\n  RED install: {detail(foreign)}  FIX: {FIX}"


def verdict_json(foreign: list[tuple[str, str]]) -> dict:
    return {"total": 1, "green": 0, "red": 1, "checks": [
        {"name": "install", "status": "red", "detail": detail(foreign), "fix": FIX,
         "duration_ms": 0.0}]}
