"""Estimator registry: entry-point group ``bt_bench.estimators``, loaded lazily.

Selecting an estimator imports only its module, so one broken plug-in cannot break the others; its error names
the distribution and the entry point. A dotted path ``pkg.module:Class`` works without registration. Listing
(``bt-bench estimators``) imports every plug-in and shows a broken one as an error row.

An entry point may name a class or factory (called with the keyword arguments given to ``get_estimator``) or a
ready estimator object. A registered estimator's ``name`` must equal its entry-point name, so reports are
labeled with the name that selected it.

Labels (a third party's PASS must never come from them): an entry-point estimator that declares ``labels`` is
refused at load (``LabelsRefusedError``), whatever its distribution. The suite's own test-only controls
(``oracle``) are not entry points: they resolve from the internal table ``_BUILTIN_TEST_ONLY``, are listed with
``test_only=True`` and never run by default. An entry point that claims one of those names for another target is
refused. ``provenance`` says where an estimator comes from and hashes its source.

Optional extras: an estimator whose library is an optional extra of its distribution (the
adapters in ``estimators/adapters``) calls ``require_extra`` when constructed. Without the library it raises
``MissingExtraError``, and the listing shows the estimator with its description and the install command
(``pip install "bt-bench[kronfluence]"``) instead of an error row; it is not in the default set. An estimator
with a true ``opt_in`` attribute (the adapters: model-based and slow) is listed and selectable by name but not
in the default set either.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import inspect
from dataclasses import dataclass
from importlib.metadata import EntryPoint, PackageNotFoundError, entry_points, packages_distributions, version
from pathlib import Path
from typing import Any

from bt_bench.estimator.contract import Capability, Estimator, describe, validate_estimator
from bt_bench.estimator.errors import EstimatorError, InvalidEstimatorError, LabelsRefusedError
from bt_bench.estimator.scoring import check_labels, import_dotted, labels_allowed

GROUP = "bt_bench.estimators"
DOTTED = "(dotted path)"
BUILTIN_DISTRIBUTION = "bt-bench"
# The suite's own test-only controls: resolved here, never from an entry point (checklist "Controls").
_BUILTIN_TEST_ONLY = {"oracle": "estimators.controls:Oracle"}


class RegistryError(EstimatorError):
    """Selecting or loading an estimator failed."""


class UnknownEstimatorError(RegistryError, LookupError):
    """No registered estimator has that name."""


class PluginLoadError(RegistryError):
    """A plug-in's import or construction raised; the cause is chained."""


class MissingExtraError(ImportError):
    """An estimator's optional library is not installed. Carries the estimator's listing facts and the command
    that installs the extra (``install``), so the listing can show both without the library."""

    def __init__(self, estimator: Any, module: str, extra: str, distribution: str = BUILTIN_DISTRIBUTION):
        self.install = f'pip install "{distribution}[{extra}]"'
        self.capabilities = tuple(sorted(getattr(estimator, "capabilities", ())))
        self.level, self.description = getattr(estimator, "level", ""), describe(estimator)
        super().__init__(f"{getattr(estimator, 'name', '?')} needs the optional library {module!r}: "
                         f"{self.install}", name=module)


def require_extra(estimator: Any, module: str, extra: str, distribution: str = BUILTIN_DISTRIBUTION) -> None:
    """Raise ``MissingExtraError`` unless ``module`` is installed (call it from the estimator's ``__init__``).
    Finds the module without importing it, so listing stays fast; a library that is installed but broken
    fails when the estimator first imports it, as an error of that estimator."""
    if importlib.util.find_spec(module.partition(".")[0]) is None:
        raise MissingExtraError(estimator, module, extra, distribution)


def _missing_extra(exc: BaseException) -> MissingExtraError | None:
    """The ``MissingExtraError`` behind a load error, if that is what it is."""
    while exc is not None and not isinstance(exc, MissingExtraError):
        exc = exc.__cause__
    return exc


@dataclass(frozen=True)
class EstimatorInfo:
    """One row of ``bt-bench estimators``. ``error`` is set (the rest partly empty) for a broken plug-in,
    ``install`` (the command) for one whose optional extra is not installed."""

    name: str
    distribution: str
    target: str
    capabilities: tuple[str, ...] = ()
    level: str = ""
    description: str = ""
    test_only: bool = False
    error: str | None = None
    opt_in: bool = False  # selectable by name, not in the default set
    install: str | None = None  # set when an optional extra is missing: the command that installs it


def _dist_name(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "(unknown distribution)"


def _entry_points() -> dict[str, EntryPoint]:
    """Registered entry points by name. The same name from two places with different targets is refused, and
    so is an entry point claiming a built-in test-only name for another target (one naming the built-in's own
    target, e.g. stale metadata of an older bt-bench install, is ignored: the built-in table wins)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        if ep.name in _BUILTIN_TEST_ONLY:
            if ep.value == _BUILTIN_TEST_ONLY[ep.name]:
                continue
            raise RegistryError(ep.name, f"entry point {ep.name} = {ep.value} ({_dist_name(ep)}) claims the "
                                         "name of a built-in test-only control; rename or uninstall it")
        seen = found.get(ep.name)
        if seen is not None and seen.value != ep.value:
            raise RegistryError(ep.name, f"registered twice: {seen.value} ({_dist_name(seen)}) and "
                                         f"{ep.value} ({_dist_name(ep)}); uninstall one")
        found.setdefault(ep.name, ep)
    return found


def available_names() -> list[str]:
    """Every selectable name (entry points and built-in test-only controls), sorted (imports nothing)."""
    return sorted({*_entry_points(), *_BUILTIN_TEST_ONLY})


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


def _import(label: str, path: str) -> Any:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise RegistryError(label, "a dotted path must look like 'package.module:ClassName'")
    try:
        obj = import_dotted(path)
    except Exception as exc:
        raise PluginLoadError(label, f"importing {path} raised {type(exc).__name__}: {exc}") from exc
    return obj


def _load_dotted(path: str, kwargs: dict[str, Any]) -> Estimator:
    est = _instantiate(path, path, _import(path, path), kwargs)
    check_labels(est)  # a labels estimator by dotted path: only a TEST_ONLY control itself
    return est


def _load_builtin(name: str, kwargs: dict[str, Any]) -> Estimator:
    path = _BUILTIN_TEST_ONLY[name]
    est = _instantiate(name, f"built-in {path}", _import(name, path), kwargs)
    if est.name != name or not labels_allowed(est):
        raise InvalidEstimatorError(name, f"built-in {path} is not the suite's test-only control {name!r}")
    return est


def _load_entry_point(ep: EntryPoint, kwargs: dict[str, Any]) -> Estimator:
    where = f"entry point {ep.name!r} = {ep.value!r} of distribution {_dist_name(ep)!r}"
    try:
        obj = ep.load()
    except Exception as exc:
        raise PluginLoadError(ep.name, f"loading {where} raised {type(exc).__name__}: {exc}") from exc
    est = _instantiate(ep.name, where, obj, kwargs)
    if Capability.LABELS in est.capabilities:  # from any distribution, the suite's own oracle included
        raise LabelsRefusedError(ep.name, f"{where} ")
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
    if name in _BUILTIN_TEST_ONLY:
        return _load_builtin(name, kwargs)
    eps = _entry_points()
    if name not in eps:
        names = sorted({*eps, *_BUILTIN_TEST_ONLY})
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise UnknownEstimatorError(name, f"no estimator registered under this name; {hint}"
                                          f"available: {', '.join(names) or '(none)'}; "
                                          "or give a dotted path 'package.module:ClassName'")
    return _load_entry_point(eps[name], kwargs)


def _info(name: str, distribution: str, target: str, load: Any, test_only: bool | None = None) -> EstimatorInfo:
    try:
        est = load()
    except EstimatorError as exc:
        missing = _missing_extra(exc)
        if missing is None:
            return EstimatorInfo(name, distribution, target, error=str(exc))
        return EstimatorInfo(name, distribution, target, missing.capabilities, missing.level,
                             missing.description, opt_in=True, install=missing.install)
    flag = bool(getattr(est, "test_only", False)) if test_only is None else test_only
    return EstimatorInfo(name, distribution, target, tuple(sorted(est.capabilities)), est.level,
                         describe(est), flag, opt_in=bool(getattr(est, "opt_in", False)))


def _builtin_info(name: str) -> EstimatorInfo:
    return _info(name, BUILTIN_DISTRIBUTION, _BUILTIN_TEST_ONLY[name], lambda: _load_builtin(name, {}), True)


def list_estimators() -> list[EstimatorInfo]:
    """Every registered estimator and built-in test-only control with its capabilities and description,
    sorted by name; a broken one carries ``error``."""
    rows = [_info(n, _dist_name(ep), ep.value, lambda ep=ep: _load_entry_point(ep, {}))
            for n, ep in _entry_points().items()]
    rows += [_builtin_info(n) for n in _BUILTIN_TEST_ONLY]
    return sorted(rows, key=lambda i: i.name)


def describe_estimator(name: str) -> EstimatorInfo:
    """The listing row for one name or dotted path (imports only that one)."""
    if ":" in name:
        return _info(name, DOTTED, name, lambda: _load_dotted(name, {}))
    if name in _BUILTIN_TEST_ONLY:
        return _builtin_info(name)
    ep = _entry_points().get(name)
    if ep is None:
        get_estimator(name)  # raises UnknownEstimatorError with the did-you-mean hint
    return _info(name, _dist_name(ep), ep.value, lambda: _load_entry_point(ep, {}))


def _version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def _distribution_of_module(module: str) -> tuple[str | None, str | None]:
    """(distribution, version) that ships the top-level package of ``module``, else (None, None)."""
    dists = packages_distributions().get(module.partition(".")[0]) or []
    return (dists[0], _version(dists[0])) if dists else (None, None)


def _source_sha256(cls: type) -> str | None:
    """sha256 over the bytes of the source file of the module that defines ``cls``. Only that one file:
    helpers it imports (e.g. ``estimators._math``) are not covered, nor are data files it reads."""
    try:
        path = inspect.getsourcefile(cls) or inspect.getfile(cls)
    except TypeError:  # a built-in class: no file
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def provenance(name_or_path: str) -> dict[str, Any]:
    """Where the estimator selected by ``name_or_path`` comes from (loads it with default arguments).

    Keys: ``name`` (the estimator's), ``distribution`` (None when unknown), ``version`` (of the distribution,
    or None), ``entry_point`` ("module:attr" it was loaded from), ``capabilities`` (sorted list), ``level``,
    ``test_only``, ``source_sha256`` (see ``_source_sha256``; None when the class has no file). Imports only
    the estimator's own module (no torch unless that module imports it).
    """
    if ":" in name_or_path:
        est, entry, test_only = _load_dotted(name_or_path, {}), name_or_path, None
        dist, ver = _distribution_of_module(name_or_path.partition(":")[0])
    elif name_or_path in _BUILTIN_TEST_ONLY:
        est, entry, test_only = _load_builtin(name_or_path, {}), _BUILTIN_TEST_ONLY[name_or_path], True
        dist, ver = BUILTIN_DISTRIBUTION, _version(BUILTIN_DISTRIBUTION)
    else:
        est = get_estimator(name_or_path)
        ep = _entry_points()[name_or_path]
        entry, test_only, dist = ep.value, None, getattr(ep, "dist", None)
        dist, ver = (dist.name, dist.version) if dist is not None else (None, None)
    return {"name": est.name, "distribution": dist, "version": ver, "entry_point": entry,
            "capabilities": sorted(est.capabilities), "level": est.level,
            "test_only": bool(getattr(est, "test_only", False)) if test_only is None else test_only,
            "source_sha256": _source_sha256(type(est))}


def default_estimators() -> list[str]:
    """Names the checks run by default: every registered estimator except those marked ``test_only`` or
    ``opt_in`` and those whose optional extra is not installed.

    A plug-in that fails to load stays in the list so the checks report its error instead of hiding it.
    """
    return [info.name for info in list_estimators() if not (info.test_only or info.opt_in)]


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
        if i.install is not None:
            desc = f"{desc} [not installed: {i.install}]"
        elif i.opt_in:
            desc = f"{desc} [opt-in]"
        rows.append((i.name, i.distribution, i.level, ", ".join(i.capabilities) or "-", desc))
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(4)]
    rule = tuple("-" * w for w in widths) + ("-" * len(header[4]),)

    def line(r: tuple[str, ...]) -> str:  # the last column is not padded
        return "  ".join([*(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)), r[4]]).rstrip()

    return "\n".join(line(r) for r in [header, rule, *rows])
