"""A static check that trace or user text reaches Streamlit's Markdown only escaped.

Every call in the modules that use streamlit (pages/, app.py, the package profiler/present/ui/) to a
function that renders Markdown (headings, captions, alerts, `st.markdown`, widget labels, help
texts, expanders, popovers, tabs, metrics, progress and spinner texts, toasts, page links, column
labels) must hand it text built only from: string literals, ALL_CAPS constants, numbers formatted
with a numeric format spec (`{n:,}`, `{x:.1f}`; a string would raise), `len(...)`, and calls to
`markup.md`, `markup.code` or `markup.fmt` with a literal template, the Markdown builders of
`profiler.present.narrative` (which escape their own fields; the hostile pages check them), and
names every binding of which in the module is such text. `unsafe_calls()` lists the others.
Tables must go through `ui.table`/`ui.pick_rows` (`raw_tables()`), and preformatted text
(`st.text`) through `markup.printable` (`raw_texts()`).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# function name -> positions of its arguments that Streamlit renders as Markdown
SINKS = {name: (0,) for name in (
    "title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success",
    "toast", "expander", "popover", "tabs", "status", "spinner", "button", "download_button",
    "form_submit_button", "checkbox", "toggle", "radio", "selectbox", "multiselect", "text_input",
    "text_area", "number_input", "slider", "select_slider", "file_uploader", "pills",
    "segmented_control", "date_input", "time_input", "color_picker", "link_button", "chat_input")}
SINKS.update(metric=(0, 1, 2), progress=(1,), page_link=(), write=tuple(range(8)), html=(0,), latex=(0,))
LITERAL_ONLY = {"html", "latex"}  # HTML and KaTeX: escaping Markdown does not make text safe there
MARKDOWN_KEYWORDS = {"label", "body", "text", "help", "delta"}
OPTION_SINKS = {"radio", "pills", "segmented_control"}  # their options are Markdown as well
ESCAPERS = {"md", "code", "fmt", "bullets"}  # bullets: each item through md
BUILDERS = {"narrative": {"alignment_summary", "cudnn_story"}}
NUMERIC_SPEC = re.compile(r"[,_]|[bdeEfFgGnoxX%]$")  # a str would raise
CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")
TABLES_MODULE = ROOT / "profiler" / "present" / "ui" / "tables.py"   # ui.table: the one place cells are made safe


def streamlit_modules() -> list[Path]:
    """The modules that can call streamlit: the pages, app.py and every module of the package
    that imports it (today the app glue, profiler/present/ui/, alone)."""
    glue = [p for p in sorted((ROOT / "profiler").rglob("*.py")) if re.search(r"^\s*(import|from) streamlit\b",
                                                                             p.read_text(), re.MULTILINE)]
    return sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"] + glue


class Checker:
    """`safe(node)` for the expressions of one module: which of its names hold only safe text
    (every assignment, augmented assignment or loop over safe text; never a parameter)."""

    def __init__(self, tree: ast.AST):
        bindings: dict[str, list] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for name in ast.walk(t):
                        if isinstance(name, ast.Name):
                            bindings.setdefault(name.id, []).append(node.value if t is name else None)
            elif isinstance(node, (ast.For, ast.comprehension)):
                for name in ast.walk(node.target):
                    if isinstance(name, ast.Name):
                        bindings.setdefault(name.id, []).append(
                            ("iter", node.iter) if node.target is name else None)
            elif isinstance(node, ast.arg):
                bindings.setdefault(node.arg, []).append(None)
            elif isinstance(node, (ast.withitem, ast.ExceptHandler, ast.Import, ast.ImportFrom)):
                for name in ast.walk(node):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        bindings.setdefault(name.id, []).append(None)
        self.names = set(bindings)
        while True:  # drop the names with a binding that is not safe, until none changes
            kept = {n for n in self.names if all(self._bound_safe(b) for b in bindings[n])}
            if kept == self.names:
                break
            self.names = kept

    def _bound_safe(self, value) -> bool:
        if value is None:
            return False
        if isinstance(value, tuple):  # a loop variable: safe when it runs over safe texts
            return self.safe(value[1]) or self._builder(value[1])
        return self.safe(value)

    @staticmethod
    def _owner_name(node: ast.Call) -> tuple[str, str]:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return func.value.id, func.attr
        return "", getattr(func, "id", "")

    def _escaper(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        owner, name = self._owner_name(node)
        if owner not in ("markup", "") or name not in ESCAPERS or (owner == "" and name == "fmt"):
            return False
        return name != "fmt" or (bool(node.args) and isinstance(node.args[0], ast.Constant))

    def _builder(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        owner, name = self._owner_name(node)
        return name in BUILDERS.get(owner, ())

    @staticmethod
    def _constant(node: ast.AST) -> bool:
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        return isinstance(node, (ast.Name, ast.Attribute)) and bool(name) and bool(CONSTANT.match(name))

    def _field(self, node: ast.FormattedValue) -> bool:
        spec = "".join(v.value for v in getattr(node.format_spec, "values", []) if isinstance(v, ast.Constant))
        if node.conversion == -1 and spec and NUMERIC_SPEC.search(spec):
            return True
        value = node.value
        return self.safe(value)

    def safe(self, node: ast.AST | None) -> bool:
        """Whether the text `node` builds can hold only escaped trace text."""
        if node is None or isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.JoinedStr):
            return all(isinstance(v, ast.Constant) or self._field(v) for v in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.safe(node.left) and self.safe(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # "text" * flag
            return self.safe(node.left)
        if isinstance(node, ast.IfExp):
            return self.safe(node.body) and self.safe(node.orelse)
        if isinstance(node, ast.BoolOp):
            return all(self.safe(v) for v in node.values)
        if isinstance(node, (ast.List, ast.Tuple)):
            return all(self.safe(e) for e in node.elts)
        if isinstance(node, ast.Name) and node.id in self.names:
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "len":
            return True
        return self._escaper(node) or self._constant(node) or self._builder(node)


def _markdown_args(call: ast.Call, name: str) -> list[ast.AST]:
    if name not in SINKS:  # st.column_config.*Column(label, help=...)
        return call.args[:1] + [k.value for k in call.keywords if k.arg in MARKDOWN_KEYWORDS]
    args = [call.args[i] for i in SINKS[name] if i < len(call.args)]
    args += [k.value for k in call.keywords if k.arg in MARKDOWN_KEYWORDS or (name == "metric" and k.arg == "value")]
    if name in OPTION_SINKS:  # the options as shown: format_func's text, else the options
        func = next((k.value for k in call.keywords if k.arg == "format_func"), None)
        options = next((k.value for k in call.keywords if k.arg == "options"),
                       call.args[1] if len(call.args) > 1 else None)
        if isinstance(func, ast.Lambda):
            args.append(func.body)
        elif func is None:
            args.append(options)
        elif not (isinstance(func, ast.Attribute) and Checker._constant(func.value)):  # CONSTANT.get
            args.append(func)
    return args


def _where(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield node, node.func.attr


def unsafe_calls(paths: list[Path] | None = None) -> list[str]:
    """`file:line: text` for each Markdown sink given text that is not provably escaped."""
    found = []
    for path in paths or streamlit_modules():
        tree = ast.parse(path.read_text(), str(path))
        checker = Checker(tree)
        for call, name in _calls(tree):
            if name in SINKS or name.endswith("Column"):
                literal = name in LITERAL_ONLY or any(k.arg == "unsafe_allow_html" for k in call.keywords)
                found += [f"{_where(path)}:{call.lineno}: {ast.unparse(arg)[:100]}"
                          for arg in _markdown_args(call, name)
                          if not (isinstance(arg, ast.Constant) if literal else checker.safe(arg))]
    return found


def raw_texts(paths: list[Path] | None = None) -> list[str]:
    """`st.text` calls (preformatted, not Markdown) given text other than `markup.printable(...)`
    or a literal: a control character from a trace (a bidi override) would reach the page."""
    found = []
    for path in paths or streamlit_modules():
        for call, name in _calls(ast.parse(path.read_text(), str(path))):
            arg = call.args[0] if call.args else None
            printable = (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute)
                         and arg.func.attr == "printable" and getattr(arg.func.value, "id", "") == "markup")
            if name == "text" and not (printable or isinstance(arg, ast.Constant)):
                found.append(f"{_where(path)}:{call.lineno}: {ast.unparse(call)[:100]}")
    return found


def raw_tables(paths: list[Path] | None = None) -> list[str]:
    """Tables put on a page other than through `ui.table` (whose cells are made safe)."""
    found = []
    for path in paths or streamlit_modules():
        for call, name in _calls(ast.parse(path.read_text(), str(path))):
            owner = getattr(call.func.value, "id", "")
            if owner == "st" and name in ("dataframe", "table", "data_editor") and path != TABLES_MODULE:
                found.append(f"{_where(path)}:{call.lineno}: st.{name}")
    return found
