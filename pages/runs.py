"""Runs page."""
import streamlit as st

from profiler import ui

st.title("Runs")
state = ui.view_state("runs")
