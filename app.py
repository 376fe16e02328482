"""Attention trace dashboard: `streamlit run app.py`.

Every page is listed here with a stable `url_path`; shared links use these paths
(`profiler.present.share.PAGES` is the same list). The runs page is the default (the root URL).
"""
import streamlit as st

from profiler.present.ui import PAGE_FILES, PAGE_ICONS, entered_through_app, preload_capture

st.set_page_config(page_title="Attention trace dashboard", page_icon="⏱️",  # an emoji: nothing fetched
                   layout="wide")
# long names without spaces (kernels, ops) wrap by CSS, never by invisible characters in the text,
# which a reader would copy along with it
st.html("<style>[data-testid='stMarkdownContainer'], [data-testid='stText'], "
        "[data-testid='stCaptionContainer'] {overflow-wrap: anywhere;}</style>")


def page(url_path: str, title: str, default: bool = False) -> st.Page:
    return st.Page(PAGE_FILES[url_path], title=title, icon=PAGE_ICONS[url_path],
                   url_path=url_path, default=default)


entered_through_app()
preload_capture()
st.navigation({
    "Runs": [page("runs", "Runs", default=True), page("profile", "Profile"),
             page("upload", "Upload")],
    "Analysis": [page("timeline", "Timeline"), page("kernels", "Kernels"),
                 page("launches", "Launches"), page("cpu-cost", "CPU cost"),
                 page("compare", "Compare"), page("sweep", "Sweep"), page("attention", "Attention"),
                 page("memory", "Memory"), page("job", "Job")],
}).run()
