"""Text from a trace or a user, made safe for the places that interpret it.

Kernel, op, file and run names come from whoever wrote the trace or renamed the run. Streamlit
renders Markdown in `st.markdown`, headings, captions, alerts, widget labels, expanders, metrics,
tabs and progress texts: there `![x](http://host/p.png)` would make every viewer's browser fetch
that URL, `[a](…)` a link, `:red[…]` coloured text and `$…$` a formula. Every such sink gets trace
or user text only through `md()`, `fmt()` (Markdown written here, with escaped fields) or, inside
a code span, `code()`, so that it shows literally (tests/test_security_markup.py checks every
call in pages/ and the app glue). Tables (`st.dataframe`, whose toolbar also downloads CSV) and
CSV downloads go through `csv_cells()`, so that a spreadsheet does not run a cell as a formula
and no cell breaks a row; terminals get `printable()` text, so that ESC or BEL stay inert.

Imports only the standard library, and pandas when a table is made safe (no streamlit: the
functions are pure).
"""
from __future__ import annotations

import re
import string
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas loads only where a table is made safe (the CLI's ops stays light)
    import pandas as pd

# the characters that Markdown, GitHub-flavoured Markdown, Streamlit's directives (:red[..], a
# colon before a word) or KaTeX ($..$) read anywhere in a line; CommonMark lets any ASCII
# punctuation be escaped with a backslash
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$@&]|:(?=\S))")
_LINE_START = re.compile(r"^(\s*(?:\d+)?)([-+=.)])")  # list items and headings at the start
# Streamlit turns ":material/" into ":material_" in the source before parsing: an escaped slash
# keeps it from seeing one
_ICON = re.compile(r"(?<=material)/")
# Streamlit finds autolinks (http://, www., x@y.z) and emoji (:fire:) in the text after escapes
# are resolved, so a backslash does not stop them; a word holding one is shown as a code span,
# whose text no such pass reads
_READ_AFTER_ESCAPES = re.compile(r"https?://|www\.|[-.\w+]@[-\w]+\.|:[\w+-]+:", re.IGNORECASE)
_WORD = re.compile(r"\S+")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c]+")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def md(text: object) -> str:
    """`text` as literal Markdown: special characters escaped, a word that Streamlit would read
    as a link or an emoji after escaping shown as a code span (the same characters, nothing
    inserted), line breaks as spaces, other control characters (a bidi override would turn the
    rest of the line around) as escapes."""
    text = printable(_LINE_BREAKS.sub(" ", str(text)))
    out, last = [], 0
    for word in _WORD.finditer(text):
        if _READ_AFTER_ESCAPES.search(word.group()):
            out += [_escape(text[last:word.start()]), code_span(word.group())]
            last = word.end()
    out.append(_escape(text[last:]))
    return _LINE_START.sub(r"\1\\\2", "".join(out), count=1)


def _escape(text: str) -> str:
    return _ICON.sub(r"\\/", _MD_SPECIAL.sub(r"\\\1", text))


def code_span(text: str) -> str:
    """`text` (one line, printable) as a Markdown code span holding exactly its characters: a
    fence longer than any run of backticks inside, and Streamlit's ":material/" rewrite kept out
    by closing the span before that slash."""
    parts = _ICON.split(text)
    return "\\/".join(_fenced(part) for part in parts if part) if len(parts) > 1 else _fenced(text)


def _fenced(text: str) -> str:
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code(text: object) -> str:
    """`text` for the inside of a Markdown code span (`…`): no backticks, line breaks or control
    characters."""
    return printable(_LINE_BREAKS.sub(" ", str(text))).replace("`", "'")


class _Escaping(string.Formatter):
    def format_field(self, value: object, format_spec: str) -> str:
        return md(super().format_field(value, format_spec))


def bullets(texts) -> str:
    """One Markdown list of literal texts (each through `md`): a list reads as one block on a page."""
    return "\n".join(f"- {md(text)}" for text in texts)


def fmt(template: str, /, *args: object, **kwargs: object) -> str:
    """`template` (Markdown written in this project's code, `str.format` fields) with every field
    filled as literal text: ``fmt("Job **{}**: {:,} ranks", name, n)``."""
    return _Escaping().format(template, *args, **kwargs)


# C0 and C1 control characters, DEL, line and paragraph separators and the bidirectional overrides
# (which reorder what a terminal or a spreadsheet shows)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def printable(text: object, keep: str = "") -> str:
    """`text` with control characters (but those in `keep`) written as escapes, `\\r` or
    `\\u001b`: the same in Python, JSON and a terminal, and inert in all three."""
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep
                        else _SHORT.get(m.group(), f"\\u{ord(m.group()):04x}"), str(text))


def csv_cell(value: object) -> object:
    """A text cell with its control characters escaped (no line break can split its row), and a
    leading apostrophe where a spreadsheet would read it as a formula."""
    if not isinstance(value, str):
        return value
    value = printable(value)
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def _is_text(values) -> bool:
    import pandas as pd

    return (values.dtype == object or pd.api.types.is_string_dtype(values.dtype)
            or isinstance(values.dtype, pd.CategoricalDtype))


def csv_cells(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with every text cell, column name and index label passed through `csv_cell` (numbers
    are left as they are): what a page's table shows and what every CSV download holds."""
    text = [c for c in df.columns if _is_text(df[c])]
    names = [csv_cell(c) for c in df.columns]
    if not text and names == list(df.columns) and not _is_text(df.index):
        return df
    out = df.copy()
    for column in text:
        out[column] = out[column].astype(object).map(csv_cell)
    out.columns = names
    if _is_text(out.index):
        out.index = out.index.astype(object).map(csv_cell)
    return out


def to_csv(df: pd.DataFrame) -> bytes:
    """`df` as the bytes of a CSV download (cells made safe by `csv_cells`)."""
    return csv_cells(df).to_csv(index=False).encode()
