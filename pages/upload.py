"""Upload: add PyTorch profiler (Kineto) Chrome traces to the store; each file becomes a run."""
import streamlit as st

from profiler import ui

st.title("Upload traces")
state = ui.view_state("upload")
limit = ui.upload_limit_mb()
st.markdown(
    "Drop one or more traces written by `torch.profiler` (`prof.export_chrome_trace(...)` or "
    "`tensorboard_trace_handler`): `.json` or `.json.gz`, "
    f"**up to {limit:,} MB per file**. The same file uploaded twice is the same run.")

with st.form("upload", clear_on_submit=True, border=False):
    files = st.file_uploader("Trace files", type=["json", "gz"], accept_multiple_files=True,
                             help=f"At most {limit:,} MB per file (server.maxUploadSize).")
    submitted = st.form_submit_button("Add to the store", type="primary", icon=":material/upload:")

if submitted and not files:
    st.warning("Choose at least one trace file first.")
if submitted and files:
    results = ui.ingest_files(files)
    if results:
        new_runs = tuple(dict.fromkeys(r.trace_id for r in results))
        state = ui.update_view(state, runs=new_runs)
        st.success(f"{len(new_runs)} run(s) ready and selected. Open them in:")
        with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
            for page, title in (("runs", "Runs"), ("timeline", "Timeline"), ("kernels", "Kernels")):
                ui.link_to(page, state.with_(page=page), label=title)
            ui.copy_link(state.with_(page="kernels"))
