"""CUDA/HIP graphs in a run, in words (sql/run_graphs.sql): a capture trace is described as a capture
(how many graphs, how many launches each recorded), not as a slow run whose GPU sat idle; a replay
trace says how much of its GPU time its graphs replayed, kernels that carry no op of their own.
"""
from __future__ import annotations

from profiler.analysis.reads.reads import sql_text


def describe(store, run_ids) -> dict[str, dict]:
    """{run_id: {role ('capture', 'replay' or 'capture and replay'), the figures of
    sql/run_graphs.sql, text}} for the runs that captured or replayed a graph."""
    ids = list(run_ids)
    if not ids:
        return {}
    out = {}
    for r in store.query(sql_text("run_graphs"), {"run_ids": ids}).to_dict("records"):
        rec = {k: (v.item() if hasattr(v, "item") else v) for k, v in r.items() if k != "run_id"}
        role = " and ".join(part for part, has in (("capture", rec["graphs_captured"]),
                                                    ("replay", rec["graph_launches"])) if has)
        out[r["run_id"]] = {"role": role, **rec, "text": text(role, rec)}
    return out


def text(role: str, g: dict) -> str:
    """One sentence for a run's graphs."""
    parts = []
    if g["graphs_captured"]:
        spread = (f"{g['launches_per_graph_min']:,}" if g["launches_per_graph_min"] == g["launches_per_graph_max"]
                  else f"{g['launches_per_graph_min']:,} to {g['launches_per_graph_max']:,} "
                       f"(median {g['launches_per_graph_median']:,.0f})")
        parts.append(f"a graph capture: {g['graphs_captured']:,} graph(s) captured, {g['captured_launches']:,} "
                     f"kernel launches recorded into them ({spread} per graph), not run: its GPU idle time is "
                     f"the capture's, not a slow run's")
    if g["graph_launches"]:
        share = 100 * g["replayed_gpu_us"] / g["gpu_us"] if g["gpu_us"] else 0.0
        own = g.get("replayed_with_op", 0)
        whose = (f"{own:,} of them given their captured ops (joined with its capture trace)" if own
                 else "with no op or shapes of their own")
        parts.append(f"a graph replay: {g['graph_launches']:,} graph launch(es) replayed {g['replayed_events']:,} "
                     f"GPU events, {share:.1f} % of its GPU time, {whose}")
    return "; ".join(parts)
