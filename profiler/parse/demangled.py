"""A demangled C++ kernel name taken apart: return type, namespaces, function, template arguments,
parameters; and the short form sentences use.

``void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float, float, float,
at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)`` is
return type ``void``, namespaces ``at``, ``native``, ``(anonymous namespace)``, function
``cunn_SoftMaxForward``, template arguments ``8``, ``float`` … and parameters ``(float*, …)``;
its short form is ``cunn_SoftMaxForward<8, float, float, float, SoftMaxForwardEpilogue>`` (within
the limit; arguments are dropped from the end, then all of them, to fit).

The scanner tracks brackets (``<>``, ``()``, ``[]``, ``{}``) so that ``::``, spaces and commas
inside template arguments or lambdas (``{lambda(int)#1}``) do not split the name, and reads
``(anonymous namespace)`` as one namespace. Names that are not C++ (``Memcpy HtoD (Pageable ->
Device)``, ``nvjet_tst_128x256_…``, Triton kernels) are kept whole.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

ANON = "(anonymous namespace)"
_OPEN, _CLOSE = "<([{", ">)]}"
_QUALIFIER = re.compile(r"(?:\(anonymous namespace\)::|\b[A-Za-z_]\w*::)+")
_CALL = re.compile(r"^(?:void\s+)?[\w:~]+\(.*\)$")  # ncclKernel_…(ncclDevComm*, …): a C function
_NESTED = re.compile(r"<[^<>]*>")


@dataclass(frozen=True)
class Demangled:
    return_type: str
    namespaces: tuple[str, ...]
    function: str
    template_args: tuple[str, ...]
    parameters: str          # the parameter list with its parentheses, '' when absent
    is_cpp: bool             # False: not a C++ name (kept whole in `function`)


def _top_level(text: str):
    """(index, char, depth) of every character, depth counting open brackets before it;
    `(anonymous namespace)` counts as plain text."""
    depth, i = 0, 0
    while i < len(text):
        if text.startswith(ANON, i):
            for j in range(len(ANON)):  # inside it, never at the top level
                yield i + j, ANON[j], depth + 1
            i += len(ANON)
            continue
        c = text[i]
        if c in _CLOSE and depth:
            depth -= 1
        yield i, c, depth
        if c in _OPEN and not (c == "<" and text[i - 1:i + 1] == "<<"):
            depth += 1
        i += 1


def _split(text: str, sep: str) -> list[str]:
    parts, start, i = [], 0, 0
    chars = list(_top_level(text))
    while i < len(chars):
        idx, _, depth = chars[i]
        if depth == 0 and text.startswith(sep, idx):
            parts.append(text[start:idx])
            start = idx + len(sep)
            i += len(sep)
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse(name: str) -> Demangled:
    text = " ".join(str(name).split())
    if "::" not in text and "<" not in text and not text.startswith("void ") and not _CALL.match(text):
        return Demangled("", (), text, (), "", False)
    qualified, params = text, ""
    for idx, c, depth in _top_level(text):  # the parameter list: the first top-level '(' after a name
        if c == "(" and depth == 0 and idx > 0 and not text.startswith(ANON, idx):
            qualified, params = text[:idx], text[idx:]
            break
    spaces = [idx for idx, c, depth in _top_level(qualified) if c == " " and depth == 0
              and not qualified[idx - 1:idx] == ","]
    return_type = qualified[:spaces[-1]].strip() if spaces else ""
    qualified = qualified[spaces[-1] + 1:] if spaces else qualified
    parts = _split(qualified, "::")
    last = parts[-1]
    function, args = last, ()
    angle = next((idx for idx, c, depth in _top_level(last) if c == "<" and depth == 0), None)
    if angle is not None and last.endswith(">"):
        function, args = last[:angle], tuple(a for a in _split(last[angle + 1:-1], ",") if a)
    return Demangled(return_type, tuple(parts[:-1]), function.strip(), args, params, True)


def _bare(arg: str) -> str:
    """A template argument without namespaces: ``at::native::(anonymous namespace)::Epilogue``
    ▶ ``Epilogue``; nested arguments keep their shape (``std::array<char*, 1ul>`` ▶ ``array<char*, 1ul>``)."""
    return _QUALIFIER.sub("", arg)


def short(name: str, limit: int = 70) -> str:
    """The name a sentence shows: the function and its template arguments, without namespaces,
    return type or parameters; arguments dropped from the end (``…``) until it fits ``limit``."""
    d = parse(name)
    if not d.is_cpp:
        return _cut(d.function, limit)
    if not d.template_args:
        return _cut(d.function or str(name), limit)
    args = [_bare(a) for a in d.template_args]
    folded = [_fold(a) for a in args]
    for keep in range(len(args), 0, -1):  # the most arguments that fit, as written or nested ones folded
        for candidate in (args, folded):
            shown = ", ".join(candidate[:keep]) + (", …" if keep < len(candidate) else "")
            text = f"{d.function}<{shown}>"
            if len(text) <= limit:
                return text
    return _cut(f"{d.function}<…>", limit)


def _fold(arg: str) -> str:
    """Nested template arguments folded: ``Traits<64, 128, Inner<4> >`` ▶ ``Traits<…>``."""
    while (folded := _NESTED.sub("\x00", arg)) != arg:
        arg = folded
    return arg.replace("\x00", "<…>")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
