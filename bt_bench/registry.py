"""Estimator registry: entry-point group ``bt_bench.estimators``, loaded lazily (issue 4 item 2).

Selecting an estimator imports only its module, so one broken plug-in cannot break the others; its error names
the distribution and the entry point. A dotted path ``pkg.module:Class`` works without registration. Listing
(``bt-bench estimators``) imports every plug-in and shows a broken one as an error row.

An entry point may name a class or factory (called with the keyword arguments given to ``get_estimator``) or a
ready estimator object. A registered estimator's ``name`` must equal its entry-point name, so reports are
labeled with the name that selected it.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from bt_bench.estimator import Estimator, EstimatorError, InvalidEstimatorError, describe, validate_estimator

GROUP = "bt_bench.estimators"
DOTTED = "(dotted path)"


class RegistryError(EstimatorError):
    """Selecting or loading an estimator failed."""


class UnknownEstimatorError(RegistryError, LookupError):
    """No registered estimator has that name."""


class PluginLoadError(RegistryError):
    """A plug-in's import or construction raised; the cause is chained."""


@dataclass(frozen=True)
class EstimatorInfo:
    """One row of ``bt-bench estimators``. ``error`` is set (the rest partly empty) for a broken plug-in."""

    name: str
    distribution: str
    target: str
    capabilities: tuple[str, ...] = ()
    level: str = ""
    description: str = ""
    test_only: bool = False
    error: str | None = None


def _dist_name(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "(unknown distribution)"


def _entry_points() -> dict[str, EntryPoint]:
    """Registered entry points by name. The same name from two places with different targets is refused."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        seen = found.get(ep.name)
        if seen is not None and seen.value != ep.value:
            raise RegistryError(ep.name, f"registered twice: {seen.value} ({_dist_name(seen)}) and "
                                         f"{ep.value} ({_dist_name(ep)}); uninstall one")
        found.setdefault(ep.name, ep)
    return found


def available_names() -> list[str]:
    """Every registered name, sorted (imports nothing)."""
    return sorted(_entry_points())


def _instantiate(label: str, where: str, obj: Any, kwargs: dict[str, Any]) -> Estimator:
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "score")):
        try:
            obj = obj(**kwargs)
        except Exception as exc:
            raise PluginLoadError(label, f"constructing {where} raised {type(exc).__name__}: {exc}") from exc
    elif kwargs:
        raise RegistryError(label, f"{where} is an estimator object; it takes no arguments "
                                   f"(got {sorted(kwargs)})")
    return validate_estimator(obj)


def _load_dotted(path: str, kwargs: dict[str, Any]) -> Estimator:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise RegistryError(path, "a dotted path must look like 'package.module:ClassName'")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise PluginLoadError(path, f"importing {path} raised {type(exc).__name__}: {exc}") from exc
    return _instantiate(path, path, obj, kwargs)


def _load_entry_point(ep: EntryPoint, kwargs: dict[str, Any]) -> Estimator:
    where = f"entry point {ep.name!r} = {ep.value!r} of distribution {_dist_name(ep)!r}"
    try:
        obj = ep.load()
    except Exception as exc:
        raise PluginLoadError(ep.name, f"loading {where} raised {type(exc).__name__}: {exc}") from exc
    est = _instantiate(ep.name, where, obj, kwargs)
    if est.name != ep.name:
        raise InvalidEstimatorError(ep.name, f"{where} yields an estimator named {est.name!r}; set its "
                                             f"`name` to {ep.name!r} so reports carry the name that "
                                             "selected it")
    return est


def get_estimator(name: str, **kwargs: Any) -> Estimator:
    """The estimator registered as ``name`` (or at dotted path ``pkg.module:Class``), built with ``kwargs``.

    Imports only that estimator's module. Raises ``UnknownEstimatorError`` (with "did you mean" and the
    available names), ``PluginLoadError`` (naming distribution and entry point) or ``InvalidEstimatorError``.
    """
    if ":" in name:
        return _load_dotted(name, kwargs)
    eps = _entry_points()
    if name not in eps:
        close = difflib.get_close_matches(name, list(eps), n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise UnknownEstimatorError(name, f"no estimator registered under this name; {hint}"
                                          f"available: {', '.join(sorted(eps)) or '(none)'}; "
                                          "or give a dotted path 'package.module:ClassName'")
    return _load_entry_point(eps[name], kwargs)


def _info(name: str, distribution: str, target: str, load: Any) -> EstimatorInfo:
    try:
        est = load()
    except EstimatorError as exc:
        return EstimatorInfo(name, distribution, target, error=str(exc))
    return EstimatorInfo(name, distribution, target, tuple(sorted(est.capabilities)), est.level,
                         describe(est), bool(getattr(est, "test_only", False)))


def list_estimators() -> list[EstimatorInfo]:
    """Every registered estimator with its capabilities and description; a broken one carries ``error``."""
    return [_info(n, _dist_name(ep), ep.value, lambda ep=ep: _load_entry_point(ep, {}))
            for n, ep in sorted(_entry_points().items())]


def describe_estimator(name: str) -> EstimatorInfo:
    """The listing row for one name or dotted path (imports only that one)."""
    if ":" in name:
        return _info(name, DOTTED, name, lambda: _load_dotted(name, {}))
    ep = _entry_points().get(name)
    if ep is None:
        get_estimator(name)  # raises UnknownEstimatorError with the did-you-mean hint
    return _info(name, _dist_name(ep), ep.value, lambda: _load_entry_point(ep, {}))


def default_estimators() -> list[str]:
    """Names the checks run by default: every registered estimator except those marked ``test_only``.

    A plug-in that fails to load stays in the list so the checks report its error instead of hiding it.
    """
    return [info.name for info in list_estimators() if not info.test_only]


def format_estimator_table(infos: list[EstimatorInfo] | None = None) -> str:
    """The table ``bt-bench estimators`` prints: name, distribution, level, capabilities, description."""
    infos = list_estimators() if infos is None else infos
    header = ("name", "distribution", "level", "capabilities", "description")
    rows = []
    for i in infos:
        if i.error is not None:
            rows.append((i.name, i.distribution, "-", "-", f"ERROR: {i.error}"))
            continue
        desc = f"{i.description} [test only]" if i.test_only else i.description
        rows.append((i.name, i.distribution, i.level, ", ".join(i.capabilities) or "-", desc))
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(4)]
    rule = tuple("-" * w for w in widths) + ("-" * len(header[4]),)

    def line(r: tuple[str, ...]) -> str:  # the last column is not padded
        return "  ".join([*(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)), r[4]]).rstrip()

    return "\n".join(line(r) for r in [header, rule, *rows])
