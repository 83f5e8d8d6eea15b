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

Matplotlib is imported lazily (Agg backend): the pytest plugin imports the table and must stay light. Each name
has one import path, its module's: this package re-exports nothing.
"""
