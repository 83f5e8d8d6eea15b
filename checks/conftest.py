"""The bt-bench checklist. Fixtures and options come from the ``bt_bench.pytest_plugin`` (pytest11 entry point)."""
