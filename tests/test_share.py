"""ViewState <-> URL: a seeded randomized round-trip property test plus the error cases."""
from __future__ import annotations

import random
import re
import string

import pytest

from profiler.present.share import (
    DEFAULT_PAGE, PAGES, RESERVED, ShareError, ViewState, app_root, decode, encode, parse_url,
    share_url, span_ns, with_span,
)

RUN_CHARS = string.ascii_letters + string.digits + "_-."
VALUE_CHARS = string.printable + "µ→é 漢"


def _random_state(rng: random.Random) -> ViewState:
    runs = tuple(dict.fromkeys(
        "".join(rng.choices(RUN_CHARS, k=rng.randint(1, 20))) for _ in range(rng.randint(0, 5))
    ))
    window = None
    if rng.random() < 0.5:
        start = rng.randint(0, 2**52)
        window = (start, start + rng.randint(1, 2**40))
    filters = {}
    for _ in range(rng.randint(0, 4)):
        key = rng.choice(string.ascii_lowercase) + "".join(
            rng.choices(string.ascii_lowercase + string.digits + "_", k=rng.randint(0, 8)))
        if key not in RESERVED:
            filters[key] = "".join(rng.choices(VALUE_CHARS, k=rng.randint(1, 12)))
    return ViewState(
        page=rng.choice(PAGES), runs=runs,
        iteration=rng.choice([None, rng.randint(0, 10_000)]),
        window_ns=window, filters=tuple(filters.items()),
    )


def test_round_trip_through_query_params_and_urls():
    rng = random.Random(20261130)
    for _ in range(2000):
        state = _random_state(rng)
        assert decode(encode(state), state.page) == state
        assert parse_url(share_url(state, base="https://example.hf.space/")) == state
        assert parse_url(share_url(state)) == state


def test_url_shape_is_readable():
    state = ViewState(page="timeline", runs=("3f2a9c0d11e2b4a7", "9be1c07fa1d2e3f4"),
                      iteration=2, window_ns=(1000, 250000), filters=(("q", "flash"),))
    assert share_url(state, "http://host:8501") == (
        "http://host:8501/timeline?runs=3f2a9c0d11e2b4a7,9be1c07fa1d2e3f4"
        "&iter=2&window=1000,250000&q=flash")


def test_default_page_is_the_root_url():
    assert share_url(ViewState(runs=("a1",)), "http://h") == "http://h/?runs=a1"
    assert parse_url("http://h/").page == DEFAULT_PAGE


def test_filters_are_order_independent_and_removable():
    a = ViewState(filters=(("b", "2"), ("a", "1")))
    b = ViewState(filters=(("a", "1"), ("b", "2")))
    assert a == b and a.filter("a") == "1" and a.filter("zz", "d") == "d"
    assert a.with_filter("a", None) == ViewState(filters=(("b", "2"),))
    assert a.with_filter("a", "") == a.with_filter("a", None)


@pytest.mark.parametrize("params, fragment", [
    ({"iter": "two"}, "iter: 'two' is not an integer"),
    ({"iter": "-1"}, "iter: -1 is not an iteration number"),
    ({"window": "5"}, "should be 'start_ns,end_ns'"),
    ({"window": "9,3"}, "start 9 ns must be before end 3 ns"),
    ({"window": "a,b"}, "window: 'a' is not an integer"),
    ({"runs": "abc,<script>"}, "'<script>' is not a run id"),
    ({"runs": "abc,abc"}, "listed twice"),
    ({"Bad-Key": "x"}, "filter name 'Bad-Key'"),
    ({"iter": "9999999999999999999"}, "is not an iteration number"),
    ({"window": "0,9007199254740993"}, "window: times must be between 0 and"),
    ({"window": "-5,3"}, "window: times must be between 0 and"),
    ({"q": "x" * 501}, "filter q: value is longer than 500 characters"),
    ({"runs": ",".join(f"r{i}" for i in range(501))}, "more than a link can name"),
])
def test_bad_parameters_raise_a_specific_error(params, fragment):
    with pytest.raises(ShareError, match=re.escape(fragment)):
        decode(params, "kernels")


def test_unknown_page_is_rejected():
    with pytest.raises(ShareError, match="unknown page 'nope'"):
        parse_url("http://h/nope?runs=a")


def test_empty_values_mean_unset():
    assert decode({"runs": "", "iter": "", "window": "", "q": ""}, "runs") == ViewState()


@pytest.mark.parametrize("url, root", [
    ("https://team-dash.hf.space/cpu-cost", "https://team-dash.hf.space"),
    ("http://127.0.0.1:8501/", "http://127.0.0.1:8501"),
    ("http://host/proxy/app/kernels/", "http://host/proxy/app"),
    ("http://host/proxy/app", "http://host/proxy/app"),
])
def test_app_root_strips_only_a_page_path(url, root):
    assert app_root(url) == root
    state = ViewState(page="compare", runs=("a1", "b2"))
    assert parse_url(share_url(state, base=app_root(url))) == state


def test_the_timeline_range_travels_in_the_url_and_a_bad_one_is_a_sentence():
    state = with_span(ViewState(page="timeline", runs=("a1",)), "range", (250_000, 300_000))
    url = share_url(state, base="http://h")
    assert url == "http://h/timeline?runs=a1&range=250000,300000"
    assert span_ns(parse_url(url), "range") == (250_000, 300_000)
    assert span_ns(with_span(state, "range", None), "range") is None
    for bad, why in (("300,200", "range: start 300 ns must be before end 200 ns"),
                     ("1,2,3", "range: '1,2,3' should be 'start_ns,end_ns'"),
                     ("a,2", "range: 'a' is not an integer")):
        with pytest.raises(ShareError) as err:
            span_ns(state.with_filter("range", bad), "range")
        assert str(err.value) == why
