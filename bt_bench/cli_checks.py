"""Where the installed checklist lives, for ``bt-bench check`` (users who installed from a wheel)."""

from __future__ import annotations

from pathlib import Path


def checks_dir() -> Path:
    """The ``checks/`` folder shipped inside the package (``bt_bench/checks``), else the repo's ``checks/``."""
    here = Path(__file__).resolve().parent
    for cand in (here / "checks", here.parent / "checks"):
        if cand.is_dir() and any(cand.glob("test_*.py")):
            return cand
    raise FileNotFoundError("bt-bench: no checklist found (expected bt_bench/checks or ./checks)")
