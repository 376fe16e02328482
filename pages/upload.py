"""Upload: add PyTorch profiler (Kineto) Chrome traces to the store; each file becomes a run."""
import streamlit as st

from profiler.analysis.findings import job_queries
from profiler.present import markup, sitemap, ui

st.title("Upload traces")
state = ui.view_state("upload")
limit = ui.upload_limit_mb()
st.markdown(
    "Drop one or more traces written by `torch.profiler` (`prof.export_chrome_trace(...)` or "
    "`tensorboard_trace_handler`): `.json` or `.json.gz`, "
    f"**up to {limit:,} MB per file**. The same file uploaded twice is the same run. "
    "The rank traces of one distributed run (several files, or one `.zip`) become one job when "
    "you give it a name.")

CHOOSE = {"files": "Files", "folder": "A folder"}
choose = st.segmented_control("Choose", list(CHOOSE), format_func=CHOOSE.get, default="files", required=True,
                              help="A folder: every .json, .json.gz and .zip in it and its subfolders (the "
                                   "rank traces of one job, say), chosen at once.")
with st.form("upload", clear_on_submit=True, border=False):
    files = st.file_uploader("Trace folder" if choose == "folder" else "Trace files", type=["json", "gz", "zip"],
                             accept_multiple_files="directory" if choose == "folder" else True,
                             help=f"At most {limit:,} MB per file (server.maxUploadSize).")
    job = st.text_input("Job name (optional)", max_chars=120,
                        help="Store the files as the ranks of one job; ranks come from each trace's "
                             "distributedInfo, else from 'rank<N>' / 'worker<N>' in its file name.")
    skip_bad = st.checkbox("Store the job without files that cannot be read",
                           help="Otherwise one bad file stops the whole job and nothing is stored.")
    graph_pair = st.checkbox("A graph replay and its capture trace: join them into one run",
                             help="Files chosen together, or one .zip holding them: the replay's kernels get "
                                  "the captured ops, shapes and FLOPs (as `ingest REPLAY --capture CAPTURE`). "
                                  "Several files or a zip holding one capture and one replay are joined "
                                  "without it when no job name is given.")
    submitted = st.form_submit_button("Add to the store", type="primary", icon=":material/upload:")

if submitted and not files:
    st.warning("Choose at least one trace file first.")
paired, joined = (ui.ingest_graph_pair(files, asked=graph_pair) if submitted and files and
                  (graph_pair or not job.strip()) else (False, None))
if paired:
    if joined:
        state = ui.update_view(state, runs=(joined.run_id,))
        st.success("The joined run is ready and selected. Open it in:")
        with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
            for page in ("runs", "kernels", "attention"):
                ui.link_to(page, state.with_(page=page), label=sitemap.BY_PATH[page].title)
elif submitted and files and job.strip():
    stored = ui.ingest_job_upload(files, job.strip(), skip_bad)
    if stored:
        missing = job_queries.missing_text(stored.ranks_missing)
        st.success(markup.fmt("Job {}: {} of {} ranks stored; missing ranks: {}.", stored.job,
                              len(stored.ranks), stored.world_size, missing))
        for line in stored.skipped:
            st.warning(markup.fmt("Left out: {}", line))
        for rank in stored.ranks:  # events skipped, values stored as missing: said, as for single uploads
            for note in rank.notes:
                st.caption(markup.fmt("rank {}: {}", rank.rank, note))
        ui.link_to("job", state.with_(page="job", filters=(("job", stored.job),)), label="Open the job")
elif submitted and any(f.name.endswith(".zip") for f in files or []):
    st.warning("A zip is read as the ranks of one job: give the job a name.")
elif submitted and files:
    results = ui.ingest_files(files)
    if results:
        new_runs = tuple(dict.fromkeys(r.run_id for r in results))
        state = ui.update_view(state, runs=new_runs)
        st.success(f"{len(new_runs)} run(s) ready and selected. Open them in:")
        with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
            for page in ("runs", "timeline", "kernels"):
                ui.link_to(page, state.with_(page=page), label=sitemap.BY_PATH[page].title)
            ui.copy_link(state.with_(page="kernels"))
