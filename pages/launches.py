"""Launches page (placeholder until the analysis pages land)."""
import streamlit as st

from profiler import ui

st.title("Launches")
state = ui.view_state("launches")
runs = ui.require_runs(state)
st.write(f"{len(runs)} runs selected.")
