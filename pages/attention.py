"""Attention in this trace: every attention op, its backend and kernel, and the top GEMMs, with
FLOPs, bytes and % of peak from the op-level cost model; the roofline of the selected runs."""
import streamlit as st

from profiler.analysis.reads import op_costs, roofline, run_queries, unmodelled
from profiler.analysis.findings import why
from profiler.present import charts, curve_charts, markup, ui

Col = st.column_config
COLUMNS = {
    "kind": Col.TextColumn("kind"), "mode": Col.TextColumn("mode", help="prefill, decode or train (a backward op)"),
    "op": Col.TextColumn("op"), "backend": Col.TextColumn("backend"),
    "shape": Col.TextColumn("shape", help="Q (batch x heads x seq x head dim) for attention; A @ B for GEMMs"),
    "dtype": Col.TextColumn("dtype"), "calls": Col.NumberColumn("calls"),
    "share_of_gpu_pct": Col.NumberColumn("% of summed kernel time", format="%.1f",
                                         help="The op's kernel time per iteration over the run's summed kernel "
                                              "time per iteration (the Kernels page's denominator)."),
    "kernel_us_mean": Col.NumberColumn("µs / call", format="%.1f"),
    "flops": Col.NumberColumn("FLOPs / call", format="%.3e", help="Useful: what the mask keeps."),
    "flops_issued": Col.NumberColumn("issued FLOPs / call", format="%.3e",
                                     help="What a tiled kernel computes: every tile holding a useful pair, in full."),
    "bytes": Col.NumberColumn("bytes / call", format="%.3e", help="Read + written, from the tensor sizes."),
    "tflops": Col.NumberColumn("TFLOP/s", format="%.1f"), "tbps": Col.NumberColumn("TB/s", format="%.2f"),
    "engine": Col.TextColumn("engine"),
    "pct_of_peak": Col.NumberColumn("% of peak", format="%.1f",
                                    help="Of the datasheet peak for this dtype on this engine."),
    "intensity": Col.NumberColumn("FLOP / byte", format="%.1f"),
    "bound": Col.TextColumn("bound", help="memory below the ridge point, compute above it"),
    "kernels": Col.TextColumn("kernels [library, arch, instruction, tile]"),
    "shape_source": Col.TextColumn("shapes from", help="trace: record_shapes; run shape: the captured run's description; "
                                   "step annotation: a serving engine's step batch (vLLM, SGLang)"),
    "suspect": Col.TextColumn("share above 100 %", width="medium",
                              help="Never shown: the model (FLOPs / bytes) or the peak (SKU) is wrong; this says which."),
}

TOTALS = {  # one iteration of each run
    "run": ui.run_column(),
    "flops_per_iter": Col.NumberColumn("FLOPs / iter", format="%.3e"),
    "bytes_per_iter": Col.NumberColumn("bytes / iter", format="%.3e", help="Read + written by the modelled ops."),
    "intensity": Col.NumberColumn("FLOP / byte", format="%.1f"),
    "kernel_us_per_iter": Col.NumberColumn("kernel µs / iter", format="%.1f"),
    "tflops": Col.NumberColumn("TFLOP/s", format="%.1f"), "tbps": Col.NumberColumn("TB/s", format="%.2f"),
    "engine": Col.TextColumn("engine (most FLOPs)"), "dtype": Col.TextColumn("dtype"),
    "roof_tflops": Col.NumberColumn("roof TFLOP/s", format="%.1f"),
    "pct_of_roof": Col.NumberColumn("% of roof", format="%.1f"), "bound": Col.TextColumn("bound"),
    "suspect": Col.TextColumn("share above 100 %"),
}

st.title("Attention")
state = ui.view_state("attention")
runs = ui.require_runs(state)
st.caption("Attention ops and the top GEMMs of each selected run, priced from the shapes and dtypes "
           "the trace recorded (record_shapes) and the kernels each op launched. Peaks are datasheet "
           "figures for the op's dtype on the engine its kernel ran on.")

with ui.guard(), ui.get_store().session() as store:
    labels = charts.label_map(run_queries.run_labels(store, runs))
    if len(runs) > 1:
        ui.ranked_runs(store, runs, "Which variant wins")   # within one mode and shape, never across
    table = op_costs.attention_in_trace(store, runs)
    for run, rows in charts.per_run(table, runs):
        st.subheader(markup.md(labels.get(run, run)), divider="gray")
        for finding in why.one_run(store, run):
            st.text(markup.printable(finding.text))  # op and kernel names are data, not Markdown
        if rows.empty:
            st.info("No attention op or GEMM of this run has FLOPs and bytes. "
                    + markup.md(unmodelled.sentence(store, run)))     # the real reason, per op
            continue
        ui.table(rows, column_config=COLUMNS, column_order=list(COLUMNS), hide_index=True,
                     width="stretch", placeholder="—")
        ui.csv_download(rows, f"attention-{run}")
    st.subheader("Roofline", divider="gray")
    roof = curve_charts.roofline_usable(roofline.roofline_table(store, runs))
    if roof.empty:
        st.info("No roofline: no modelled op of the selected runs launched GPU work.")
    else:
        per_op = st.toggle("One point per op (crosses)")
        ops = op_costs.ops_table(store, runs) if per_op else None
        ui.kept_chart(store, ("roofline", per_op), runs,
                        lambda: curve_charts.roofline_chart(roof, roofline.ceilings(roof), labels, ops), width="stretch")
        st.caption(markup.fmt("Peaks: {}.", "; ".join(sorted(set(roof["peak_source"].dropna())))))
        ui.table(roof.assign(run=roof["run_id"].map(labels)), column_config=TOTALS,
                     column_order=list(TOTALS), hide_index=True)
    ui.copy_link(state)
