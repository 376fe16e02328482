"""Timeline page (placeholder until the analysis pages land)."""
import streamlit as st

from profiler import ui

st.title("Timeline")
state = ui.view_state("timeline")
runs = ui.require_runs(state)
st.write(f"{len(runs)} runs selected.")
