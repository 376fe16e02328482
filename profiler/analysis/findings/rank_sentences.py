"""The sentence of one ranked set (`ranking.rank_table` rows of one set, fastest first): who wins,
by how much within what noise, and why; or that the best two are tied. Variants that run another's
kernels are named with it, outliers with their run ids."""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import completeness
from profiler.analysis.findings import rank_why, repeats
from profiler.storage.session import StoreHandle

CPU_NOTE = " (the CPU time of the attention call: these runs recorded no GPU work)"


def figure_words(row) -> str:
    """'57.5 µs (median of 4 repeats, 57.2–57.7)' or '57.5 µs (one run)'."""
    fig = row["figure"]
    if fig.n == 1:
        return f"{fig.median:,.1f} µs (one run)"
    return f"{fig.median:,.1f} µs (median of {fig.n} repeats, {fig.lo:,.1f}–{fig.hi:,.1f})"


def _noise_words(noise: float) -> str:
    return "no repeats, so the noise is not measured" if noise != noise else f"noise floor {100 * noise:.1f} %"


def _tie(win, second, noise: float) -> str:
    a, b = win["figure"], second["figure"]
    why = ("their repeats overlap" if a.lo <= b.hi and b.lo <= a.hi
           else f"{100 * repeats.difference(a, b):.1f} % apart, under the noise floor of {100 * noise:.1f} %")
    return (f"{win['label']} and {second['label']} are tied: {figure_words(win)} against "
            f"{figure_words(second)}; {why}.")


def _lead(store, win, second, noise: float) -> tuple[str, str | None]:
    ratio = second["us_per_call"] / win["us_per_call"]
    text = (f"{win['label']} is fastest at {win['us_per_call']:,.1f} µs per call, {ratio:.2f}× faster than "
            f"{second['label']} ({second['us_per_call']:,.1f} µs); {figure_words(win)} against "
            f"{figure_words(second)}, {_noise_words(noise)}")
    found = rank_why.cause(store, win, second)
    return text + (f". Why: {found[1]}." if found else "."), found[0] if found else None


def _aliases(store, part: pd.DataFrame) -> list[str]:
    out = []
    for _, row in part[part["same_kernels_as"].notna()].iterrows():
        library = rank_why.library_of(store, row)
        what = f"the same {library} kernel" if library else "the same kernels"
        out.append(f"{row['label']} dispatches to {what} as {row['same_kernels_as']}, "
                   f"{figure_words(row)}: not ranked as a rival.")
    return out


def _outliers(part: pd.DataFrame) -> tuple[list[str], list[dict]]:
    words, evidence = [], []
    for _, row in part.iterrows():
        for run, us in zip(row["outliers"], row["outlier_us"]):
            off = 100 * (us / row["us_per_call"] - 1)
            words.append(f"Outlier: run {run} of {row['variant'] or row['label']} took {us:,.1f} µs, "
                         f"{off:+.0f} % from its group's median ({row['us_per_call']:,.1f} µs): set aside.")
            evidence.append({"run_id": run, "us_per_call": us, "group_median_us": row["us_per_call"]})
    return words, evidence


def sentence(store: StoreHandle, part: pd.DataFrame) -> tuple[str, dict]:
    """(the sentence, its evidence) for one set's rows of a rank table."""
    timed = part[part["figure"].map(lambda f: f.known)]
    if timed.empty:
        return "None of these runs recorded a time per call (GPU work or a timed attention call): " \
               "there is nothing to rank.", {}
    rivals = timed[timed["same_kernels_as"].isna()]
    win = rivals.iloc[0]
    noise_floor = timed["noise_pct"].iloc[0] / 100
    evidence = {"winner": win["run_id"], "winner_runs": list(win["run_ids"]), "us_per_call": win["us_per_call"],
                "interval_us": [win["us_min"], win["us_max"]], "repeats": int(win["repeats"]),
                "timed_on": win["timed_on"], "noise_floor_pct": None if noise_floor != noise_floor else 100 * noise_floor,
                "rule": repeats.RULE}
    if len(rivals) == 1:
        text = f"{win['label']} is the only variant with a time per call: {figure_words(win)}."
    else:
        second = rivals.iloc[1]
        noise = repeats.pair_noise(win["figure"], second["figure"], noise_floor)
        tie = repeats.tied(win["figure"], second["figure"], noise)
        cause = None
        text = _tie(win, second, noise) if tie else None
        if not tie:
            text, cause = _lead(store, win, second, noise)
        r = repeats.ratio(win["figure"], second["figure"])
        evidence |= {"runner_up": second["run_id"], "runner_up_runs": list(second["run_ids"]), "tied": bool(tie),
                     "ratio": round(float(r.mid), 4), "ratio_interval": [round(float(r.lo), 4), round(float(r.hi), 4)],
                     "pair_noise_pct": None if noise != noise else 100 * noise, "cause": cause}
    if win["timed_on"] != "GPU":
        text = text.rstrip(".") + CPU_NOTE + "."
    same = _aliases(store, part)
    odd, odd_evidence = _outliers(part)
    evidence |= {"same_kernels": {r["variant"]: r["same_kernels_as"] for _, r in part.iterrows()
                                  if isinstance(r["same_kernels_as"], str)}, "outliers": odd_evidence}
    whole = _incomplete(store, timed)
    if whole:
        evidence["incomplete"] = whole
    return " ".join([text, *same, *odd, *([_incomplete_words(whole)] if whole else [])]), evidence


def _incomplete(store, timed: pd.DataFrame) -> dict:
    """{label: qualifier} of the ranked groups holding a run whose trace is incomplete."""
    ids = [r for runs in timed["run_ids"] for r in runs]
    found = completeness.verdicts(store, ids)
    return {row["label"]: q for _, row in timed.iterrows()
            for q in dict.fromkeys(found[r]["qualifier"] for r in row["run_ids"]) if q}


def _incomplete_words(whole: dict) -> str:
    return "Figures from incomplete traces: " + "; ".join(f"{label} ({q})" for label, q in whole.items()) + "."
