"""Progress of long work (building a run, its base model's warm-up, deriving a fixture) as plain lines on the
``bt_bench.progress`` logger. Nothing is shown unless someone listens: the pytest plugin does (under ``-n 2`` each
xdist worker writes the lines to a file the controller prints from, ``bt_bench.plugin.progress``), so a first run
shows what it is building instead of a silent terminal; when everything is cached no line is written.

Why a logger: it is the standard channel a library offers (no global state here, no print), and the listener decides
where lines go. The command line keeps its tqdm bars (``progress=True`` arguments).
"""

from __future__ import annotations

import logging
import time

LOGGER = logging.getLogger("bt_bench.progress")


def emit(message: str) -> None:
    """One progress line (shown only where a handler listens at INFO)."""
    LOGGER.info(message)


def run_label(cfg) -> str:
    """'seed 3' or 'seed 3, no_bonus re-run': how progress lines name a run (a ``RunConfig``)."""
    return f"seed {cfg.seed}" + (f", {cfg.ablation} re-run" if cfg.ablation != "none" else "")


def duration(seconds: float) -> str:
    """'42 s', '3 min 05 s'."""
    s = int(round(seconds))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


class Ticker:
    """Lines for a loop of ``total`` steps: the first call at once, then at most one every ``every`` seconds, and
    the last step; each with the time elapsed and, once a step is done, an ETA from the mean step time."""

    def __init__(self, label: str, total: int, *, every: float = 15.0, unit: str = "step") -> None:
        self.label, self.total, self.every, self.unit = label, int(total), float(every), unit
        self.t0, self.last = time.monotonic(), None

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if self.last is not None and done < self.total and now - self.last < self.every:
            return
        self.last = now
        spent = now - self.t0
        eta = f", ETA {duration(spent / done * (self.total - done))}" if 0 < done < self.total else ""
        emit(f"{self.label}: {self.unit} {done}/{self.total}, {duration(spent)} elapsed{eta}")


__all__ = ["LOGGER", "Ticker", "duration", "emit", "run_label"]
