"""Progress where the user looks: the lines of ``bt_bench.runs.progress`` (building a run, deriving a fixture) on the
terminal of the process the user watches, also under ``pytest -n 2``.

Under xdist the work happens in the workers, whose output pytest never shows while they run. So each worker appends
its lines to one file (its path handed over in ``workerinput``, as the crash list is), and the controller prints new
lines from a background thread about every half second, then once more at the end; the file goes with the session.
Without xdist the lines go straight to the terminal. When everything is cached nothing is emitted, so nothing shows.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path

import pytest

PROGRESS_FILE_KEY = "bt_bench_progress_file"  # workerinput key: where workers append their progress lines
POLL_S = 0.5


class _Lines(logging.Handler):
    """A handler that hands each record's message, one line, to ``write``."""

    def __init__(self, write) -> None:
        super().__init__(logging.INFO)
        self.write = write

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.write(record.getMessage().replace("\n", " "))
        except Exception:  # noqa: BLE001  (progress must never fail the work it reports on)
            self.handleError(record)


class ProgressRelay:
    """The plugin object: attaches the progress handler (worker: to the shared file; no xdist: to the terminal) and,
    on the xdist controller, the thread that prints the workers' lines."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.path: Path | None = None
        self.handler: _Lines | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._offset = 0
        from bt_bench.runs.progress import LOGGER

        self.logger = LOGGER
        worker = getattr(config, "workerinput", None)
        if worker is not None:
            path, wid = worker.get(PROGRESS_FILE_KEY), worker.get("workerid", "gw?")
            if path:
                self._attach(lambda line: _append(path, f"[{wid}] {line}"))
        elif not _uses_xdist(config):
            self._attach(self._print_uncaptured)

    def _attach(self, write) -> None:
        self.handler = _Lines(write)
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False  # pytest's log capture must not swallow it

    def _print(self, line: str) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        if getattr(tr._tw, "width_of_current_line", 0):  # after xdist's progress dots: a line of its own
            tr._tw.line()
        tr.write_line(f"bt-bench: {line}")

    def _print_uncaptured(self, line: str) -> None:
        """Without xdist the work runs inside a test's setup, where pytest captures the output: step out of it, as
        pytest's own live logging does."""
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        if capman is None:
            self._print(line)
            return
        with capman.global_and_fixture_disabled():
            self._print(line)

    # ------------------------------------------------------------------ xdist controller
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        if self.path is None:
            fd, path = tempfile.mkstemp(prefix="bt-bench-progress-", suffix=".txt")
            os.close(fd)
            self.path = Path(path)
            self._thread = threading.Thread(target=self._relay, name="bt-bench-progress", daemon=True)
            self._thread.start()
        node.workerinput[PROGRESS_FILE_KEY] = str(self.path)

    def _relay(self) -> None:
        while not self._stop.wait(POLL_S):
            self._drain()

    def _drain(self) -> None:
        if self.path is None:
            return
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return
        done = data.rfind(b"\n") + 1  # whole lines only: a worker may be halfway through one
        self._offset += done
        for line in data[:done].decode("utf-8", "replace").splitlines():
            self._print(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._drain()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
        if self.handler is not None:
            self.logger.removeHandler(self.handler)


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:  # one short O_APPEND write per line: workers do not interleave
        f.write(line + "\n")


def _uses_xdist(config: pytest.Config) -> bool:
    n = getattr(config.option, "numprocesses", None)
    return bool(n) and getattr(config.option, "dist", "no") != "no"


__all__ = ["PROGRESS_FILE_KEY", "ProgressRelay"]
