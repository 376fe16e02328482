"""Attention trace dashboard: `streamlit run app.py`.

Every page is listed here with a stable `url_path`; shared links use these paths
(`profiler.share.PAGES` is the same list). The runs page is the default (the root URL).
"""
import streamlit as st

st.set_page_config(page_title="Attention trace dashboard", page_icon=":material/timer:",
                   layout="wide")

PAGES = {
    "Runs": [
        st.Page("pages/runs.py", title="Runs", icon=":material/list:", url_path="runs",
                default=True),
        st.Page("pages/profile.py", title="Profile", icon=":material/play_circle:",
                url_path="profile"),
        st.Page("pages/upload.py", title="Upload", icon=":material/upload:", url_path="upload"),
    ],
    "Analysis": [
        st.Page("pages/timeline.py", title="Timeline", icon=":material/view_timeline:",
                url_path="timeline"),
        st.Page("pages/kernels.py", title="Kernels", icon=":material/memory:",
                url_path="kernels"),
        st.Page("pages/launches.py", title="Launches", icon=":material/rocket_launch:",
                url_path="launches"),
        st.Page("pages/cpu_cost.py", title="CPU cost", icon=":material/speed:",
                url_path="cpu-cost"),
        st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:",
                url_path="compare"),
    ],
}

st.navigation(PAGES).run()
