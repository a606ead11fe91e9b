"""The warm background daemon behind ``fxscope check --daemon``: a Unix-socket transport over a
:class:`~fxscope.session.Workspace` (:mod:`.paths`, :mod:`.protocol`, :mod:`.client`,
:mod:`.server`)."""
