"""The part of Go's text/template that scheduler_perf's object templates use.

Upstream renders each node, pod and ``createAny``/``updateAny`` template with Go's text/template
before decoding it, with ``.Index`` (the object's position in its op) and ``.Count`` (the op's
count), and registers two integer functions, ``div`` and ``mod``. The templates use only
actions that print a value: fields, number and string literals, function calls, parenthesised
calls and pipelines (``{{ .Index | mod 12 }}`` is ``mod 12 .Index``). Control structures
(``if``, ``range``, ``with``...) are not among them; a template that uses one is refused with a
:class:`TemplateError` naming it, rather than rendered wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<open>\() | (?P<close>\)) | (?P<pipe>\|)
        | (?P<string>"(?:[^"\\]|\\.)*"|`[^`]*`)
        | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
        | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.)
        | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
_KEYWORDS = frozenset(
    {"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"}
)


class TemplateError(ValueError):
    """A template this renderer cannot render faithfully."""


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TemplateError(f"not an integer: {value!r}")
    return value


def _divide(a: Any, b: Any) -> int:
    """Go's integer division: truncated toward zero."""
    dividend, divisor = _integer(a), _integer(b)
    if divisor == 0:
        raise TemplateError("integer divide by zero")
    quotient = abs(dividend) // abs(divisor)
    return quotient if (dividend < 0) == (divisor < 0) else -quotient


def _remainder(a: Any, b: Any) -> int:
    """Go's ``%``: the remainder has the dividend's sign."""
    return _integer(a) - _divide(a, b) * _integer(b)


FUNCTIONS: Mapping[str, Callable[..., Any]] = {"div": _divide, "mod": _remainder}
"""The functions upstream registers for its templates (v1.34.10: ``div`` and ``mod``)."""


def format_value(value: Any) -> str:
    """A value as Go's ``%v`` prints it (what an action writes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if value is None:
        return "<no value>"
    return str(value)


def _tokens(text: str) -> list[tuple[str, str]]:
    position, found = 0, []
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise TemplateError(f"cannot read {text[position:]!r}")
        kind = match.lastgroup or ""
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


class _Evaluator:
    def __init__(self, tokens: list[tuple[str, str]], env: Mapping[str, Any]) -> None:
        self.tokens = tokens
        self.position = 0
        self.env = env

    def pipeline(self) -> Any:
        value = self.command(None, first=True)
        while self._peek() == "pipe":
            self.position += 1
            value = self.command(value, first=False)
        return value

    def command(self, piped: Any, first: bool) -> Any:
        operands: list[tuple[str, Any]] = []
        while self._peek() not in ("pipe", "close", None):
            operands.append(self.operand())
        if not operands:
            raise TemplateError("empty command")
        (kind, head), rest = operands[0], [value for _, value in operands[1:]]
        if kind == "word":
            if head not in FUNCTIONS:
                raise TemplateError(f"function {head!r} is not defined")
            arguments = rest if first else [*rest, piped]
            return FUNCTIONS[head](*arguments)
        if rest or not first:
            raise TemplateError(f"{head!r} is not a function")
        return head

    def operand(self) -> tuple[str, Any]:
        kind, text = self.tokens[self.position]
        self.position += 1
        if kind == "open":
            value = self.pipeline()
            if self._peek() != "close":
                raise TemplateError("unclosed parenthesis")
            self.position += 1
            return "value", value
        if kind == "string":
            return "value", _unquote(text)
        if kind == "number":
            number = float(text)
            return "value", int(number) if re.fullmatch(r"-?\d+", text) else number
        if kind == "field":
            return "value", self._field(text)
        if kind == "word":
            if text in _KEYWORDS:
                raise TemplateError(f"the {text!r} action is not supported")
            if text in ("true", "false"):
                return "value", text == "true"
            return "word", text
        raise TemplateError(f"unexpected {text!r}")

    def _field(self, path: str) -> Any:
        value: Any = self.env
        for name in path.strip(".").split("."):
            if not name:
                continue
            if not isinstance(value, Mapping) or name not in value:
                raise TemplateError(f"no value for {path}")
            value = value[name]
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.position][0] if self.position < len(self.tokens) else None


def _unquote(text: str) -> str:
    if text.startswith("`"):
        return text[1:-1]
    return bytes(text[1:-1], "utf-8").decode("unicode_escape")


def render(text: str, env: Mapping[str, Any]) -> str:
    """``text`` with every action replaced by its value; ``{{-`` and ``-}}`` trim spaces."""
    out: list[str] = []
    position = 0
    for match in _ACTION.finditer(text):
        literal = text[position : match.start()]
        if match.group(1):
            literal = literal.rstrip()
        out.append(literal)
        body = match.group(2)
        if not (body.startswith("/*") and body.endswith("*/")):
            evaluator = _Evaluator(_tokens(body), env)
            value = evaluator.pipeline()
            if evaluator.position != len(evaluator.tokens):
                raise TemplateError(f"cannot read {{{{{body}}}}}")
            out.append(format_value(value))
        position = match.end()
        if match.group(3):
            while position < len(text) and text[position].isspace():
                position += 1
    out.append(text[position:])
    return "".join(out)
