"""Attention trace dashboard: `python -m profiler app` (or `streamlit run app.py`; profiler/present/ui/serve.py says the difference).

Every page is listed once, in `profiler.present.sitemap.SITE` (URL path, title, script, icon,
sidebar group); shared links use those paths. The first, the runs page, is the default (the root URL).
"""
import streamlit as st

from profiler.present.sitemap import BY_PATH, DEFAULT_PAGE, groups
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
# the runs page is served at the root URL; /runs, as its title reads in the sidebar, takes there
# with its query (Streamlit keys a page by its URL path, so the default page's key is another)
ROOT_KEY = "app-root"


def to_root() -> None:
    st.switch_page(BY_PATH[DEFAULT_PAGE].file, query_params=st.query_params.to_dict())


def nav_page(p) -> st.Page:
    """A page of the site in the navigation (the default one at the root URL, keyed `ROOT_KEY`)."""
    default = p.url_path == DEFAULT_PAGE
    return st.Page(p.file, title=p.title, icon=p.icon, default=default, url_path=ROOT_KEY if default else p.url_path)


pages = {group: [nav_page(p) for p in group_pages] for group, group_pages in groups().items()}
pages[BY_PATH[DEFAULT_PAGE].group].append(
    st.Page(to_root, title=BY_PATH[DEFAULT_PAGE].title, url_path=DEFAULT_PAGE, visibility="hidden"))
page = st.navigation(pages)
with page_run(page.url_path):  # counted as a page being drawn; its reads share one open database
    page.run()
