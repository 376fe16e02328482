"""Kernels page (placeholder until the analysis pages land)."""
import streamlit as st

from profiler import ui

st.title("Kernels")
state = ui.view_state("kernels")
runs = ui.require_runs(state)
st.write(f"{len(runs)} runs selected.")
