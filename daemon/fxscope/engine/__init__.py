"""The incremental engine shared by the CLI and the language server."""

from fxscope.engine.engine import Engine, ProgressEvent, installed_torch_version
from fxscope.engine.report import TargetResult, build_report

__all__ = ["Engine", "ProgressEvent", "TargetResult", "build_report", "installed_torch_version"]
