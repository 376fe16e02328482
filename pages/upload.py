"""Upload page."""
import streamlit as st

from profiler import ui

st.title("Upload")
state = ui.view_state("upload")
