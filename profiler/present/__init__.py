"""DataFrames to Altair charts and literal text, view state to URLs, progress; the ui package is the one that imports streamlit."""
import sys

# Altair's schema checker, jsonschema, imports the optional IRI format checker rfc3987-syntax when it
# is installed (Jupyter brings it along), and that package builds a grammar as it is imported: 0.8 s
# of the first page with a chart, on 2 cores. No chart here has an IRI to check: that checker is left
# out (set before any module of this package imports Altair).
sys.modules.setdefault("rfc3987_syntax", None)
