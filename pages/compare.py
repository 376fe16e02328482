"""Compare page (placeholder until the analysis pages land)."""
import streamlit as st

from profiler import ui

st.title("Compare")
state = ui.view_state("compare")
runs = ui.require_runs(state)
st.write(f"{len(runs)} runs selected.")
