"""CPU cost page (placeholder until the analysis pages land)."""
import streamlit as st

from profiler import ui

st.title("CPU cost")
state = ui.view_state("cpu-cost")
runs = ui.require_runs(state)
st.write(f"{len(runs)} runs selected.")
