"""The language server (``fxscope serve``): :mod:`.server` wires pygls to one workspace session
per folder; each feature (diagnostics, hover, code lens, code actions, commands) is its own module."""
