"""Profile: capture attention variants with torch.profiler on this machine; new runs are selected.

torch loads when the user sets up a capture (`ui.capture_layer`), not when the page opens.
"""
import streamlit as st

from profiler.present import markup, ui

st.title("Profile attention variants")
state = ui.view_state("profile")
if not ui.capture_layer():
    st.stop()

from profiler.capture.config import CaptureConfig  # noqa: E402 (torch: loaded by ui.capture_layer)
from profiler.capture.setting import DTYPES, MODES, Setting  # noqa: E402
from profiler.capture.variants import VARIANTS, availability, availability_by_mode, default_device  # noqa: E402

SEQ_LENS = (1, 4, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
MODE_HELP = ("prefill: a forward over the whole sequence; decode: the chosen query lengths (1 = one new token) "
             "against a KV cache of 'KV length' keys, aligned bottom-right; train: forward and backward, "
             "with gradients for q, k and v")
QUICK = ("naive", "naive_inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn")
# small enough that a CPU capture finishes in seconds; GPU defaults are a typical LLM layer
DEFAULTS = {"cpu": dict(batch=1, heads=4, seq=[256], head_dim=64, dtype="fp32"),
            "cuda": dict(batch=8, heads=16, seq=[1024], head_dim=64, dtype="bf16")}


def device_note(device: str) -> None:
    if device == "cuda":
        st.success("Capturing on this machine's CUDA GPU.", icon=":material/memory:")
    else:
        st.warning("No CUDA GPU on this machine: the capture runs on the CPU. Kernels, launches and "
                   "GPU time only exist on a GPU, so GPU-only variants are skipped (reasons below) "
                   "and CPU runs show CPU ops only.", icon=":material/warning:")


def shape_inputs(d: dict) -> dict:
    c = st.columns(4)
    return dict(
        batch=c[0].number_input("batch", 1, 256, d["batch"]),
        heads=c[1].number_input("heads", 1, 256, d["heads"]),
        head_dim=c[2].number_input("head dim", 8, 512, d["head_dim"], step=8),
        dtype=c[3].selectbox("dtype", list(DTYPES), index=list(DTYPES).index(d["dtype"])),
        seq_lens=tuple(st.multiselect("sequence lengths (decode: query tokens; several = a sweep, one run each)",
                                      SEQ_LENS, default=d["seq"])),
        causal=st.toggle("causal mask", value=True))


def mode_inputs(heads: int) -> dict:
    """The mode and the shape beyond batch × heads × length × head dim (issue 24)."""
    c = st.columns(4)
    mode = c[0].selectbox("mode", MODES, help=MODE_HELP)
    kv_heads = c[1].number_input("KV heads (fewer: GQA/MQA)", 1, 256, heads)
    kv_len = c[2].number_input("KV length (decode)", 1, 1 << 20, 4096, disabled=mode != "decode")
    window = c[3].number_input("sliding window (0: none)", 0, 1 << 20, 0)
    return {"mode": mode, "kv_heads": None if kv_heads == heads else int(kv_heads),
            "kv_len": int(kv_len) if mode == "decode" else None, "window": int(window) or None}


def modes_table(setting: Setting) -> None:
    """What each variant can do in every mode at this shape, with the reason where it cannot."""
    by_mode = availability_by_mode(setting)
    rows = [{"variant": a.name, **{mode: "yes" if rows[i].available else f"no: {rows[i].reason}"
                                    for mode, rows in by_mode.items()}}
            for i, a in enumerate(by_mode[MODES[0]])]
    with st.expander("Which variant runs in which mode (at this shape, here)"):
        ui.table(rows, hide_index=True)


def schedule_inputs() -> dict:
    st.markdown("**Schedule** — a cold run records the first call of a variant in a fresh process "
                "with empty compile and CUDA caches (compiles, cuDNN's plan build, flashinfer's "
                "first-use JIT build: up to minutes, the bar counts the seconds); a warm run records "
                "`active` steps after warm-up. A sweep (several lengths) records each point 3 times.")
    c = st.columns(4)
    return dict(cold=c[0].toggle("also a cold run", value=True),
                warmup_calls=c[1].number_input("warm-up calls (unprofiled)", 0, 100, 3),
                warmup=c[2].number_input("profiler warm-up steps", 0, 20, 1),
                active=c[3].number_input("active (recorded) steps", 1, 50, 3))


def availability_table(setting: Setting) -> list[str]:
    rows = availability(setting)
    skipped = [r for r in rows if not r.available]
    if skipped:
        st.markdown(f"**{len(skipped)} of {len(rows)} variants cannot run with these settings "
                    "here and will be skipped:**")
        ui.table([{"variant": r.name, "why it is skipped": r.reason} for r in skipped],
                     hide_index=True)
    return [r.name for r in rows if r.available]


def show_results(state, results, skipped) -> None:
    new = tuple(dict.fromkeys(r.run_id for r in results))
    for reason in sorted({f"{o.variant} (L={o.seq_len}): {o.skipped}" for o in skipped}):
        st.caption(markup.fmt("Skipped {}", reason))
    if not new:
        st.warning("No run was profiled; see the reasons above.")
        return
    state = ui.update_view(state, runs=new)
    st.success(f"{len(new)} new run(s) in the store and selected. Open them in:")
    with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
        for page in ("runs", "kernels", "timeline", "cpu-cost"):
            ui.link_to(page, state.with_(page=page))
        ui.copy_link(state.with_(page="kernels"))


device = default_device()
device_note(device)
shape = shape_inputs(DEFAULTS[device])
modes = mode_inputs(int(shape["heads"]))
schedule = schedule_inputs()
setting = Setting(device=device, dtype=shape["dtype"], head_dim=shape["head_dim"], causal=shape["causal"],
                  mode=modes["mode"], gqa=modes["kv_heads"] is not None, window=modes["window"])
runnable = availability_table(setting)
modes_table(setting)
chosen = st.multiselect("variants", runnable, default=[v for v in QUICK if v in runnable],
                        help=markup.md("; ".join(f"{n}: {VARIANTS[n].description}" for n in runnable)))
ready = bool(chosen and shape["seq_lens"])
if st.button("Run capture", type="primary", icon=":material/play_arrow:", disabled=not ready):
    config = CaptureConfig(variants=tuple(chosen), device=device, **shape, **modes, **schedule)
    with ui.guard():
        show_results(state, *ui.capture_runs(config))
elif not ready:
    st.caption("Choose at least one variant and one sequence length.")
