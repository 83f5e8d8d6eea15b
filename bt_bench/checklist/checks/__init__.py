"""One module per checklist item (docs/checklist.md, "The checks"): its spec, verdict, cell, key figure, replay and
the thresholds it owns, handed to the registry as ``SPEC``. ``bt_bench.checklist.registry`` lists them in order."""
