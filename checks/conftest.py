"""The bt-bench checklist. Fixtures and options come from the ``bt_bench.plugin`` (pytest11 entry point)."""
