"""The job: a :class:`~fxscope.job.trace_job.TraceJob` in, the target's result out.

Import the target (:mod:`.target`, :mod:`.safe_module`), build it (:mod:`.building`,
:mod:`.construct`), run the configured analyses, each on a model of its own
(:mod:`.analyses`), and assemble the result (:mod:`.run`). It runs inside the worker's forked
child, but knows nothing of processes: :mod:`fxscope.worker` isolates it.
"""
