"""The fault zoo's modules are workspace material, not tests: ``blocking_preload`` never finishes
importing, so pytest's doctest collection must not import it."""

collect_ignore = ["blocking_preload.py"]
