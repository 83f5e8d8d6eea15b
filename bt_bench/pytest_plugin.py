"""pytest plugin for bt-bench (registered under ``pytest11``). Import-light: no torch at module top."""
