"""Attention trace dashboard: `python -m profiler app` (or `streamlit run app.py`; profiler/present/ui/serve.py says the difference).

Every page is listed once, in `profiler.present.sitemap.SITE` (URL path, title, script, icon,
sidebar group); shared links use those paths. The first, the runs page, is the default (the root URL).
"""
import streamlit as st

from profiler.present.sitemap import DEFAULT_PAGE, groups
from profiler.present.ui import entered_through_app, page_run, preload

entered_through_app()  # first: before any element is drawn
# an emoji: nothing fetched (a Material icon as the favicon is fetched from fonts.gstatic.com)
st.set_page_config(page_title="Attention trace dashboard", page_icon="⏱️", layout="wide")
# long names without spaces (kernels, ops) wrap by CSS, never by invisible characters in the text,
# which a reader would copy along with it; the main column keeps 4 rem above (the header's height)
# and 2 rem below instead of Streamlit's 6 and 10 (pages stay within three screens at 1600 x 1000)
st.html("<style>[data-testid='stMarkdownContainer'], [data-testid='stText'], "
        "[data-testid='stCaptionContainer'] {overflow-wrap: anywhere;} "
        "[data-testid='stMainBlockContainer'] {padding-top: 4rem; padding-bottom: 2rem;}</style>")

preload()
page = st.navigation({
    group: [st.Page(p.file, title=p.title, icon=p.icon, url_path=p.url_path, default=p.url_path == DEFAULT_PAGE)
            for p in pages]
    for group, pages in groups().items()
})
with page_run(page.url_path):  # counted as a page being drawn; its reads share one open database
    page.run()
