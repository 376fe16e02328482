"""Profile page."""
import streamlit as st

from profiler import ui

st.title("Profile")
state = ui.view_state("profile")
