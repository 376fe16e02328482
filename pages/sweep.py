"""Sweep: TFLOP/s (prefill, train) or TB/s (decode) per variant against the one axis of the shape a
sweep varies (length, KV length, window, head dim or K/V heads), the crossovers named, every point
linked to its run's timeline."""
import streamlit as st

from profiler.analysis.findings import memory, sweep_leads, sweeps
from profiler.analysis.reads import queries, run_queries, sweep_roofs
from profiler.present import curve_charts, markup, memory_charts, ui

Col = st.column_config


def columns(axis: str, unit: str) -> dict:
    return {
        "variant": Col.TextColumn("variant"),
        "x": Col.NumberColumn(markup.md(sweeps.AXIS_NAMES[axis])),
        "median": Col.NumberColumn(markup.md(f"{unit} (median)"), format="%.3g",
                                   help="The median over the repeats of this variant at this point."),
        "min": Col.NumberColumn(markup.md(f"{unit} min"), format="%.3g"),
        "max": Col.NumberColumn(markup.md(f"{unit} max"), format="%.3g"),
        "us_per_call": Col.NumberColumn("µs / call (median)", format="%.1f",
                                        help="The time of one call, median of the repeats: as ranked everywhere."),
        "us_min": Col.NumberColumn("µs min", format="%.1f"),
        "us_max": Col.NumberColumn("µs max", format="%.1f"),
        "repeats": Col.NumberColumn("repeats", help="Repeats the figure uses (outliers set aside)."),
        "runs": Col.NumberColumn("runs", help="Warm captured runs at this point."),
        "outliers": Col.TextColumn("outliers", help="Runs far from the median of their repeats: set aside."),
        "same_kernels_as": Col.TextColumn("same kernels as", help="The variant whose very kernels this one "
                                          "runs at this point: named with it, not ranked as its rival."),
        "timeline": Col.LinkColumn("timeline", display_text="open",
                                   help="The timeline of the run nearest the median."),
    }


def no_sweep() -> None:
    st.info("No sweep here: a sweep is a variant captured warm at two or more values of one axis "
            "(sequence length, KV cache length, window, head dim or K/V heads), every other part of "
            "the shape and the mode the same. Capture one on the profile page or with "
            "`python -m profiler capture --kv-len 2048,8192 --repeats 3` (or --seq, --window, "
            "--head-dim, --kv-heads), or select such runs on the runs page.")
    st.page_link(ui.PAGE_FILES["profile"], label="Profile a sweep", icon=ui.PAGE_ICONS["profile"])
    st.stop()


st.title("Sweep")
state = ui.view_state("sweep")
with ui.guard(), ui.get_store().session() as store:
    every = list(run_queries.run_catalog(store)["run_id"])
    runs = sweeps.sweep_runs(store, state.runs, every) if state.runs else every
    points = sweeps.sweep_points(store, runs)
    if points.empty:
        no_sweep()
    curves = sweep_leads.ranked_curves(store, sweeps.sweep_curves(points), points)
    crossings = sweeps.crossovers(curves)
    leading = sweep_leads.leaders(curves)
    source = (f"the variants of the {len(state.runs)} selected runs, at every point captured"
              if state.runs else "every captured run in the store")
    st.caption(f"Warm runs of {source}, one section per sweep (a mode and a shape with one axis "
               "varied): decode rated by TB/s, prefill and training by TFLOP/s, so the higher variant "
               "is the faster; click a dot (one run) or a point (the median) to open its timeline.",
               help="Each run is rated by the work its shape asks of any variant over its GPU time per "
               "call: decode by TB/s (the bytes of Q, K, V and the output: it is memory-bound), "
               "prefill and training by TFLOP/s (the attention's FLOPs, forward and backward); the "
               "roofline on the Attention page rates what each run's own ops do instead. The lines join "
               "the medians of the repeats, the bars span their least to their most. Where two lines "
               "cross, the faster variant changes (dotted rules), through ties: two variants whose "
               "repeats overlap, or differ by less than the noise floor (the larger spread of their "
               "repeats), are tied.")
    state, log_y = ui.log_axis(state, "ylog", default=True, label="Log y axis",
                               help="TFLOP/s and TB/s on a logarithmic axis (decode spans 0.01-10 TB/s); "
                                    "off: a linear axis from 0, where the band near the roof reads better.")
    base = ui.app_base()
    for n, sweep in enumerate(curves["sweep"].unique()):
        mine = curves[curves["sweep"] == sweep]
        axis, unit = mine["axis"].iloc[0], sweeps.METRICS[mine["metric"].iloc[0]]
        st.subheader(markup.md(sweeps.sweep_title(points, sweep)), divider="gray")
        crossed = crossings[crossings["sweep"] == sweep]
        drawn = points[points["sweep"] == sweep]
        roofs = sweep_roofs.bandwidth_roofs(store, drawn["run_id"]) if unit == "TB/s" else None
        roof_key = () if roofs is None else tuple(roofs["text"])  # measured ceilings are not per run
        ui.kept_chart(store, ("sweep", sweep, base, log_y, roof_key), drawn["run_id"],
                      lambda mine=mine, drawn=drawn, crossed=crossed, roofs=roofs: curve_charts.sweep_chart(
                          mine, drawn, crossed, base, log_y=log_y, roofs=roofs),
                      width="stretch")
        if roofs is not None and not roofs.empty:
            st.caption(markup.md("Dashed: " + "; ".join(roofs["text"]) + " (the GPU's HBM bandwidth; "
                                 "measured where the store keeps the GPU's ceilings)."))
        lead = sweep_leads.lead_sentence(leading[leading["sweep"] == sweep], axis)
        if lead:
            st.markdown(markup.md(lead))
        same = sweep_leads.same_kernel_sentence(mine, axis)
        if same:
            st.markdown(markup.md(same))
        if not crossed.empty:  # one list: the crossings read as one block
            st.markdown(markup.bullets(crossed["text"]))
        if crossed.empty:
            st.markdown(markup.md(f"No two variants swap the lead in {unit} over this sweep, ties passed through."))
        table = curve_charts.sweep_table(mine, base)
        with st.expander(f"Every point: medians, spreads, repeats, outliers, timelines ({len(table)} rows)"):
            ui.table(table, column_config=columns(axis, unit), column_order=list(columns(axis, unit)),
                     hide_index=True, placeholder="—")
            ui.csv_download(table.drop(columns="timeline"), f"sweep-{n + 1}-{axis}")
    lengths = points[points["axis"] == "seq_len"]
    if not lengths.empty:
        st.subheader("Peak memory against sequence length", divider="gray")
        shapes = queries.run_shapes(store, list(lengths["run_id"].unique()))
        found = memory.memory_summary(store, shapes["run_id"])
        points_mem = shapes.merge(found, on="run_id")
        if points_mem.empty:
            st.caption("None of these runs recorded memory events (profile_memory=True).")
        else:
            st.caption("Peak allocated GPU memory of each warm run (dots) and the median per length (lines), "
                       "log-log: a slope of 2 is memory that grows as L² (the score matrix), 1 as L.")
            ui.kept_chart(store, ("peak_vs_length",), points_mem["run_id"],
                            lambda: memory_charts.peak_vs_length_chart(points_mem), width="stretch")
