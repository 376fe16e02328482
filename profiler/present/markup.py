"""Text from a trace or a user, made safe for the places that interpret it.

Kernel, op, file and run names come from whoever wrote the trace or renamed the run. Streamlit
renders Markdown in `st.markdown`, headings, captions, alerts, widget labels and progress texts:
there `![x](http://host/p.png)` would make every viewer's browser fetch that URL, `[a](…)` a
link, `:red[…]` coloured text and `$…$` a formula. Every such sink gets trace or user text only
through `md()` (or, inside a code span, `code()`), so that it shows literally. CSV downloads go
through `csv_cells()`, so that a spreadsheet does not run a cell as a formula.

Imports only the standard library and pandas (no streamlit: the functions are pure).
"""
from __future__ import annotations

import re

import pandas as pd

# the characters that Markdown, GitHub-flavoured Markdown (autolinks: http://, x@y), Streamlit's
# directives (:red[..], :material/..:) or KaTeX ($..$) read anywhere in a line; CommonMark lets
# any ASCII punctuation be escaped with a backslash
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$@&])")
_LINE_START = re.compile(r"^(\s*(?:\d+)?)([-+=.)])")  # list items and headings at the start
# Streamlit finds colour directives (:red[..]), icons and emoji (:x:) and autolinks (http://,
# www., x@y.z) in the text after escapes are resolved, so a backslash does not stop them: an
# invisible word joiner after the colon, inside "www." and after "@" does
WORD_JOINER = "\u2060"
_BREAK = re.compile(r"(:|@)(?=\S)|(?<=www)(?=\.)", re.IGNORECASE)
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c]+")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def md(text: object) -> str:
    """`text` as literal Markdown: special characters escaped, patterns that Streamlit reads
    after escaping broken by an invisible word joiner, line breaks as spaces."""
    text = _BREAK.sub(lambda m: (m.group(1) or "") + WORD_JOINER, _LINE_BREAKS.sub(" ", str(text)))
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return _LINE_START.sub(r"\1\\\2", text, count=1)


def code(text: object) -> str:
    """`text` for the inside of a Markdown code span (`…`): no backticks or line breaks."""
    return _LINE_BREAKS.sub(" ", str(text)).replace("`", "'")


def csv_cell(value: object) -> object:
    """A text cell that a spreadsheet would read as a formula gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_cells(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with every text cell passed through `csv_cell` (numbers are left as they are)."""
    text = [c for c in df.columns if df[c].dtype == object or pd.api.types.is_string_dtype(df[c])]
    if not text:
        return df
    out = df.copy()
    for column in text:
        out[column] = out[column].map(csv_cell)
    out.columns = [csv_cell(str(c)) for c in out.columns]
    return out
