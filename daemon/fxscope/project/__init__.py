"""The workspace layer: ``[tool.fxscope]`` configuration, workspace files, and discovery of the
targets to trace (from the AST; nothing is imported, torch included).

>>> from fxscope.project import discover, find_root, load_config
"""

from __future__ import annotations

from .config import (
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    Config,
    ConfigError,
    TargetConfig,
    find_root,
    load_config,
)
from .discovery import INHERITED, Discovery, FileError, Target, discover
from .files import is_included, module_name_for, relpath, workspace_files

__all__ = [
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "INHERITED",
    "Config",
    "ConfigError",
    "Discovery",
    "FileError",
    "Target",
    "TargetConfig",
    "discover",
    "find_root",
    "is_included",
    "load_config",
    "module_name_for",
    "relpath",
    "workspace_files",
]
