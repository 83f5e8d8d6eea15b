"""The report: the JSON schema and its one writer, the terminal table, the plots, the HTML / Markdown pages, the
``report`` and ``replay`` commands, and a comparison of two reports.

* :mod:`.schema`: ``SCHEMA``, :func:`write_report` (plain data in: the plugin and the replay both write
  through it), :func:`load_report`, :func:`normalized` (a result-order-independent view for the renderers);
* :mod:`.units`: per-unit data of a result (``verdict["units"]``; :func:`legacy_units` for older files) and
  the cells' key figures;
* :mod:`.table`: cells, labels, :func:`format_table`;  :mod:`.plots`: one function per figure;
* :mod:`.html`: :func:`render_html`, :func:`render_markdown`;
* :mod:`.cli` (``bt-bench report``), :mod:`.replay` (``bt-bench replay``), :mod:`.compare`
  (``python -m bt_bench.report.compare A.json B.json``).

Matplotlib is imported lazily (Agg backend): the pytest plugin imports the table and must stay light.
"""

from __future__ import annotations

from .cli import main
from .html import CSS, render_html, render_markdown, write_outputs
from .plots import PLOTS, plot_alignment, plot_auc, plot_curves, plot_lift, render_plots
from .replay import replay_main, replay_settings, results_from_verdicts
from .schema import (
    SCHEMA,
    build_report,
    estimator_provenance,
    json_default,
    load_report,
    normalized,
    runs_of,
    write_report,
)
from bt_bench.checklist.figures import key_figure, short_reason, units_of_verdict
from bt_bench.checklist.gate import FIXTURE, cell_of

from .table import (
    CHECKS,
    COLORS,
    GATE_ORDER,
    LABELS,
    SEVERITY,
    VERDICT_OUTCOME,
    canonical,
    cell_text,
    format_table,
)
from .units import legacy_units, units

__all__ = ["CHECKS", "COLORS", "CSS", "FIXTURE", "GATE_ORDER", "LABELS", "PLOTS", "SCHEMA", "SEVERITY",
           "VERDICT_OUTCOME", "build_report", "canonical", "cell_of", "cell_text", "compare_reports",
           "estimator_provenance", "format_table", "json_default", "key_figure", "legacy_units", "load_report",
           "main", "normalized", "plot_alignment", "plot_auc", "plot_curves", "plot_lift", "render_html",
           "render_markdown", "render_plots", "replay_main", "replay_settings", "results_from_verdicts",
           "runs_of", "short_reason", "units", "units_of_verdict", "write_outputs", "write_report"]


def __getattr__(name: str):
    """``compare_reports`` is loaded on first use, so ``python -m bt_bench.report.compare`` runs it fresh."""
    if name == "compare_reports":
        from .compare import compare_reports

        return compare_reports
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
