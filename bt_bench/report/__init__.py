"""The report: the JSON schema and its one writer, the terminal table, the plots, the HTML / Markdown pages, the
``report`` and ``replay`` commands, and a comparison of two reports.

* :mod:`.schema`: ``SCHEMA``, :func:`write_report` (plain data in: the plugin and the replay both write
  through it), :func:`load_report` (upgrades schema-1 reports once), :func:`normalized` (a result-order-independent
  view for the renderers); a result's cell and its units are ``bt_bench.checklist.result.CellResult``'s JSON;
* :mod:`.table`: cells, labels, :func:`format_table`;  :mod:`.plots`: one function per figure;
* :mod:`.html`: :func:`render_html`, :func:`render_markdown`;
* :mod:`.cli` (``bt-bench report``), :mod:`.replay` (``bt-bench replay``), :mod:`.compare`
  (``python -m bt_bench.report.compare A.json B.json``);
* :mod:`.leaderboard`, :mod:`.slim`, :mod:`.docgen`, :mod:`.board_cli` (``bt-bench leaderboard``, ``bt-bench results``).

Matplotlib is imported lazily (Agg backend): the pytest plugin imports the table and must stay light. Each name
has one import path, its module's: this package re-exports nothing.
"""
