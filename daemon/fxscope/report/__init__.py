"""Torch-free views over results, shared by the CLI, the daemon and the language server: the
report assembly (:mod:`.build`), finding locations and anchors (:mod:`.locations`), selection,
suppressions read from the buffer text and exit status (:mod:`.filters`), and baseline
fingerprints (:mod:`.baseline`)."""
