"""DataFrames to Altair charts and literal text, view state to URLs, progress; ui.py is the one module that imports streamlit."""
