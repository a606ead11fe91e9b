"""Quick fixes for findings, each a real edit (the text transforms live in :mod:`fxscope.lsp.edits`):
suppress with ``# fxscope: ignore[CODE]``; add the failing module's class to ``leaf-modules`` or
the failing function to ``wrap-functions`` in pyproject.toml; ``len(x)`` -> ``x.size(0)``;
``int(x.shape[i])`` -> ``x.size(i)``; *Create an fxscope target* for a class fxscope built from a
recipe or could not build (its factory and target table, as ``fxscope init`` writes them).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.lsp import edits
from fxscope.lsp.context import ServerContext
from fxscope.lsp.diagnostics import SOURCE, resolve_file
from fxscope.lsp.positions import PositionEncoder, split_lines
from fxscope.lsp.workspaces import Folder, path_to_uri, uri_to_path
from fxscope.lsp.config_edits import with_entries
from fxscope.model import Finding, Location
from fxscope.report.causes import library_name, recommended_setting
from fxscope.report.factories import factories_text, targets_text
from fxscope.report.libraries import settings_for

__all__ = ["register", "CodeActionFeature", "text_edit"]

log = logging.getLogger("fxscope.lsp")

_ERROR_CODES_FOR_LEAF = ("FXS101", "FXS102", "FXS103", "FXS104", "FXS105", "FXS106", "FXS107", "FXS403")


def text_edit(lines: Sequence[str], edit: edits.Edit, encoder: PositionEncoder) -> types.TextEdit:
    """An LSP edit (negotiated encoding) from a store-coordinate :class:`~fxscope.lsp.edits.Edit`."""
    start = encoder.position(lines, edit.line, edit.column)
    end = encoder.position(lines, edit.end_line, edit.end_column)
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=edit.new_text)


def _shown(finding: Finding, root: Path, path: Path) -> Location | None:
    """Where ``finding`` is shown, when that is in ``path``."""
    return finding.primary if resolve_file(root, finding.primary.file) == path else None


#: The module ``fxscope init`` and the action write factories to (in the first python-path directory).
FACTORIES_MODULE = "fxscope_targets"

_PerFile = dict[Path, tuple[list[str], list[edits.Edit], bool]]


class CodeActionFeature:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ helpers
    def _document_changes(self) -> bool:
        caps = self.ctx.capabilities
        ws = caps.workspace if caps else None
        return bool(ws and ws.workspace_edit and ws.workspace_edit.document_changes)

    def _can_create(self) -> bool:
        caps = self.ctx.capabilities
        ws = caps.workspace if caps else None
        ops = ws.workspace_edit.resource_operations if ws and ws.workspace_edit else None
        return bool(ops and types.ResourceOperationKind.Create in ops) and self._document_changes()

    def _edit(self, per_file: _PerFile) -> types.WorkspaceEdit | None:
        """A WorkspaceEdit from store edits per file; the bool says the file does not exist yet."""
        if any(new for _, _, new in per_file.values()) and not self._can_create():
            return None
        if not self._document_changes():
            return types.WorkspaceEdit(changes={
                path_to_uri(p): [text_edit(lines, e, self.ctx.encoder) for e in es]
                for p, (lines, es, _) in per_file.items()})
        changes: list[types.TextDocumentEdit | types.CreateFile | types.RenameFile | types.DeleteFile] = []
        for p, (lines, es, new) in per_file.items():
            uri = path_to_uri(p)
            if new:
                changes.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)))
            changes.append(types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=self.ctx.documents.version(p)),
                edits=[text_edit(lines, e, self.ctx.encoder) for e in es]))
        return types.WorkspaceEdit(document_changes=changes)

    def _text(self, path: Path) -> str | None:
        text = self.ctx.documents.text(path)
        if text is None and path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
        return text

    def _action(self, title: str, diagnostic: types.Diagnostic | None,
                per_file: _PerFile, preferred: bool = False) -> types.CodeAction | None:
        edit = self._edit(per_file)
        if edit is None:
            return None
        return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, edit=edit,
                                diagnostics=[diagnostic] if diagnostic else None, is_preferred=preferred or None)

    def _pyproject_action(self, folder: Folder, key: str, value: str, title: str,
                          diagnostic: types.Diagnostic | None, preferred: bool = False) -> types.CodeAction | None:
        pyproject = folder.root / "pyproject.toml"
        text = self._text(pyproject)
        edit = edits.add_to_config_list(text, key, value)
        if edit is None:
            return None
        return self._action(title, diagnostic, {pyproject: (split_lines(text or ""), [edit], text is None)},
                            preferred=preferred)

    def library_action(self, folder: Folder, finding: Finding,
                       diagnostic: types.Diagnostic | None) -> types.CodeAction | None:
        """*Apply the fxscope settings for einops*: every ``leaf-modules`` and ``wrap-functions``
        entry the README documents for the installed library the failure is in, added to
        pyproject.toml's ``[tool.fxscope]`` in one edit (the table created when missing); a
        workspace-level fix for every finding the library causes. None for a library without
        known settings, or when pyproject.toml lists them all already."""
        settings = settings_for(library_name(finding))
        if settings is None:
            return None
        pyproject = folder.root / "pyproject.toml"
        text = self._text(pyproject)
        new_text = with_entries(text, settings.entries())
        if new_text is None:
            return None
        lines = split_lines(text or "")
        whole = edits.Edit(1, 1, len(lines) or 1, len(lines[-1]) + 1 if lines else 1, new_text)
        return self._action(f"Apply fxscope's settings for {settings.name} to pyproject.toml "
                            "(its layers and functions as single graph nodes, workspace-wide)",
                            diagnostic, {pyproject: (lines, [whole], text is None)})

    # ------------------------------------------------------------------ actions
    def _rewrite(self, path: Path, text: str, finding: Finding, diagnostic: types.Diagnostic | None
                 ) -> types.CodeAction | None:
        """``len(x)`` -> ``x.size(0)`` (FXS103), ``int(x.shape[i])`` -> ``x.size(i)`` (FXS104)."""
        loc = finding.location
        if loc.outside or loc.column is None or loc.end_column is None:
            return None
        end_line = loc.end_line or loc.line
        if finding.code == "FXS103":
            e = edits.replace_len(text, loc.line, loc.column, end_line, loc.end_column)
            title = "Replace with `{}` (recorded in the graph)"
        elif finding.code == "FXS104":
            e = edits.replace_int_shape(text, loc.line, loc.column, end_line, loc.end_column)
            title = "Replace with `{}` (stays a traced value)"
        else:
            return None
        if e is None:
            return None
        return self._action(title.format(e.new_text), diagnostic, {path: (split_lines(text), [e], False)},
                            preferred=True)

    def actions_for(self, folder: Folder, path: Path, text: str, finding: Finding, shown: Location,
                    diagnostic: types.Diagnostic | None) -> list[types.CodeAction]:
        lines = split_lines(text)
        code = finding.code
        out: list[types.CodeAction | None] = [self._rewrite(path, text, finding, diagnostic)]
        if code == "FXS405":
            out.append(self.target_action(folder, path, shown.line, diagnostic))
        if code in _ERROR_CODES_FOR_LEAF:
            recommended = recommended_setting(finding.hint)
            if recommended is not None:  # the fix the hint names comes first, preferred
                out.insert(0, self._setting_action(folder, *recommended, diagnostic, preferred=True))
            out.append(self.library_action(folder, finding, diagnostic))
            scope = next((s for s in finding.scopes if s.path), None)
            if scope is not None and ("leaf-modules", scope.type) != recommended:
                out.append(self._setting_action(folder, "leaf-modules", scope.type, diagnostic))
            out.append(self._wrap_action(folder, finding, diagnostic))
        s = edits.suppress(text, shown.line, code)
        if s is not None:
            out.append(self._action(f"Suppress {code} on this line", diagnostic, {path: (lines, [s], False)}))
        return [a for a in out if a is not None]

    def _setting_action(self, folder: Folder, key: str, value: str, diagnostic: types.Diagnostic | None,
                        preferred: bool = False) -> types.CodeAction | None:
        """Add one ``leaf-modules`` or ``wrap-functions`` entry to pyproject.toml."""
        if key == "leaf-modules":
            title = f"Keep `{value.rsplit('.', 1)[-1]}` opaque: add it to leaf-modules in pyproject.toml"
        else:
            title = f"Record `{value.rsplit(':', 1)[-1]}` as one node: add `{value}` to wrap-functions in pyproject.toml"
        return self._pyproject_action(folder, key, value, title, diagnostic, preferred=preferred)

    def _wrap_action(self, folder: Folder, finding: Finding, diagnostic: types.Diagnostic | None) -> types.CodeAction | None:
        file = resolve_file(folder.root, finding.location.file)
        if folder.root not in file.parents:
            return None
        text = self._text(file)
        func = edits.enclosing_function(text or "", finding.location.line)
        module = edits.module_name(file, self.ctx.python_path(folder))
        if func is None or module is None:
            return None
        return self._setting_action(folder, "wrap-functions", f"{module}:{func}", diagnostic)

    def target_action(self, folder: Folder, path: Path, line: int,
                      diagnostic: types.Diagnostic | None) -> types.CodeAction | None:
        """*Create an fxscope target for `Net`*: ``fxscope init`` for the class at ``line``: its
        factory (the build fxscope inferred, or a template with the constructor's parameters) in
        ``fxscope_targets.py`` in the first python-path directory, and its target table in
        pyproject.toml. Nothing when both exist already."""
        plan = folder.workspace.factory_plan(path, line)
        if plan is None:
            return None
        directories = self.ctx.python_path(folder) or [folder.root]
        factories = directories[0] / f"{FACTORIES_MODULE}.py"
        pyproject = folder.root / "pyproject.toml"
        fac_text, py_text = self._text(factories), self._text(pyproject)
        functions = factories_text(fac_text or "", [plan])
        tables = targets_text(py_text or "", [plan], FACTORIES_MODULE, comment_templates=False)
        if not functions and not tables:
            return None
        per_file: _PerFile = {}
        if functions:
            per_file[factories] = (split_lines(fac_text or ""), [edits.append_text(fac_text, functions)], fac_text is None)
        if tables:
            per_file[pyproject] = (split_lines(py_text or ""), [edits.append_text(py_text, tables)], py_text is None)
        how = f"built {plan.provenance}" if plan.provenance else "a template to fill in"
        return self._action(f"Create an fxscope target for `{plan.class_name}` ({how})", diagnostic, per_file)

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        only = params.context.only
        if only and not any(k in (types.CodeActionKind.QuickFix, "quickfix") for k in only):
            return []
        path = uri_to_path(params.text_document.uri)
        folder = self.ctx.folders.for_path(path, create=False)
        if path is None or folder is None or not self.ctx.options_for(folder).enable:
            return None
        text = self._text(path)
        if text is None:
            return None
        first, last = params.range.start.line + 1, params.range.end.line + 1
        wanted = [(d, str(d.code), d.range.start.line + 1) for d in params.context.diagnostics
                  if d.source == SOURCE and d.code is not None]
        out: list[types.CodeAction] = []
        seen: set[tuple[str, int]] = set()
        for finding in folder.workspace.findings_for(path).findings:
            shown = _shown(finding, folder.root, path)
            if shown is None:
                continue
            match = next((d for d, code, line in wanted if code == finding.code and line == shown.line), None)
            if match is None and not (first <= shown.line <= last):
                continue
            key = (finding.code, shown.line)
            if key in seen:
                continue
            seen.add(key)
            try:
                out.extend(self.actions_for(folder, path, text, finding, shown, match))
            except Exception:
                log.exception("code actions for %s at %s:%s failed", finding.code, path, shown.line)
        for summary in folder.workspace.classes_in(path):  # classes fxscope built from a recipe
            if summary.provenance and first <= summary.line <= last and ("FXS405", summary.line) not in seen:
                action = self.target_action(folder, path, summary.line, None)
                if action is not None:
                    out.append(action)
        return _unique(out)


def _unique(actions: Sequence[types.CodeAction]) -> list[types.CodeAction]:
    """One action per title (two findings on one line offer the same fix once, with the
    diagnostics of both), preferred actions first (the order clients show them in)."""
    by_title: dict[str, types.CodeAction] = {}
    for action in actions:
        kept = by_title.get(action.title)
        if kept is None:
            by_title[action.title] = action
            continue
        merged = list(kept.diagnostics or ())
        merged += [d for d in action.diagnostics or () if d not in merged]
        kept.diagnostics = merged or None
        if action.is_preferred:
            kept.is_preferred = True
    ordered = list(by_title.values())
    return [a for a in ordered if a.is_preferred] + [a for a in ordered if not a.is_preferred]


def register(ls: LanguageServer, ctx: ServerContext) -> CodeActionFeature:
    feature = CodeActionFeature(ctx)

    @ls.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False))
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        return feature.code_actions(params)

    return feature
