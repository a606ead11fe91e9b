"""The language server (``fxscope serve``): :mod:`.server` runs pygls and registers every handler
module, one per group (lifecycle, configuration, folders, documents, diagnostics, hover, code
lens, code actions, commands); each depends on the typed :mod:`.context`, never on the server.
Every workspace folder has its own session (:class:`fxscope.session.Workspace`)."""
