"""Every page of the dashboard, listed once: its URL path, title, script, icon and sidebar group.

`share.py` reads the URL paths (a link names its page by them), `ui` the scripts and icons
(page links) and `app.py` the whole list (`st.navigation`). Adding a page is one line here plus
its script in `pages/` (docs/architecture.md, "Adding a page").

Imports nothing (presentation layer; no streamlit here).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    url_path: str   # the page in a URL: /timeline?runs=...; stable, since shared links use it
    title: str      # the sidebar's name for it
    icon: str       # a Material icon, as Streamlit writes one
    group: str      # the sidebar section it is listed under

    @property
    def file(self) -> str:
        """Its script, relative to the project folder: cpu-cost -> pages/cpu_cost.py."""
        return f"pages/{self.url_path.replace('-', '_')}.py"


# in sidebar order; the first is the default page, served at the root URL
SITE = (
    Page("runs", "Runs", ":material/list:", "Runs"),
    Page("profile", "Profile", ":material/play_circle:", "Runs"),
    Page("upload", "Upload", ":material/upload:", "Runs"),
    Page("timeline", "Timeline", ":material/view_timeline:", "Analysis"),
    Page("kernels", "Kernels", ":material/memory:", "Analysis"),
    Page("events", "Events", ":material/format_list_numbered:", "Analysis"),
    Page("launches", "Launches", ":material/rocket_launch:", "Analysis"),
    Page("cpu-cost", "CPU cost", ":material/speed:", "Analysis"),
    Page("compare", "Compare", ":material/compare_arrows:", "Analysis"),
    Page("sweep", "Sweep", ":material/ssid_chart:", "Analysis"),
    Page("attention", "Attention", ":material/center_focus_strong:", "Analysis"),
    Page("memory", "Memory", ":material/memory_alt:", "Analysis"),
    Page("job", "Job", ":material/lan:", "Analysis"),
    Page("sql", "SQL", ":material/terminal:", "Analysis"),
)
BY_PATH = {page.url_path: page for page in SITE}
DEFAULT_PAGE = SITE[0].url_path


def groups() -> dict[str, list[Page]]:
    """The pages by sidebar section, both in their order in SITE."""
    found: dict[str, list[Page]] = {}
    for page in SITE:
        found.setdefault(page.group, []).append(page)
    return found
