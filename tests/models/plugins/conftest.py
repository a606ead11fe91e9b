"""The plug-in here is workspace material, copied into the workspaces of the tests that use it: it
registers an analysis when imported, which pytest's doctest collection must not do in its own
process."""

collect_ignore = ["fxs_params.py"]
