"""CEL device selectors in the environment kube-scheduler v1.34 gives them.

A DeviceClass or a request selects devices with CEL expressions over one variable, ``device``:
``device.driver``, ``device.attributes[domain][name]`` and ``device.capacity[domain][name]``.
An attribute or capacity named without a domain belongs to the driver's domain, and looking up a
domain the device does not have gives an empty map rather than an error, so
``has(device.attributes["other.example.com"].model)`` is false on a foreign device instead of
failing (upstream's ``cel/compile.go``).

The runtime is ``cel-expr-python``: Google's C++ CEL implementation with Python bindings,
Apache-2.0, with wheels for CPython 3.11 to 3.13 on x86_64 and aarch64 (manylinux_2_28, which the
image's Debian base satisfies). It type-checks at compile time and evaluates some 55,000 selectors
a second, twice the Rust bindings and forty times the pure Python implementation; all three lack
Kubernetes' own functions, which this module adds.

What of Kubernetes' selector environment is supported:

- the CEL standard library, the strings extension (``upperAscii``, ``split``, ``format``, ...) and
  ``cel.bind`` (the bindings extension), as upstream's base environment;
- ``quantity(s)`` and ``isQuantity(s)`` with upstream's lenient parser (:mod:`.quantity`),
  ``sign(q)``, and a quantity's ``isInteger``, ``asInteger``,
  ``asApproximateFloat``, ``add``, ``sub`` (quantity or int), ``isGreaterThan``, ``isLessThan``,
  ``compareTo``; ``==`` between quantities compares values (``quantity("1Gi") ==
  quantity("1024Mi")``); capacities are quantities;
- ``semver(s)``, ``semver(s, normalize)``, ``isSemver(s)``, ``isSemver(s, normalize)`` and a
  version's ``major``, ``minor``, ``patch``, ``isGreaterThan``, ``isLessThan``, ``compareTo``;
  ``==`` ignores build metadata as upstream; version attributes are such versions;
- a selector whose type is known not to be bool does not compile (``must evaluate to bool or the
  unknown type, not string``), and one whose value is not a bool at run time is a runtime error;
- upstream's texts for ``compilation failed: ERROR: <input>:1:5: ...`` and runtime errors such as
  ``no such key: model``, ``division by zero`` or ``index out of bounds: 5``.

``tests/dra/test_cel.py`` holds some hundred selectors with what upstream's own package answered
for them, which this module answers alike.

What is not:

- ``device`` is typed as a map of dynamic values, not as upstream's ``kubernetes.DRADevice``
  object: a misspelt field (``device.drvier``) fails when evaluated (``no such key``) instead of at
  compile time, and an expression that iterates over an attribute domain
  (``device.attributes["x"].exists(...)``), which the C++ checker cannot type, runs unchecked, so
  its type errors also show only when evaluated; the alpha field
  ``device.allowMultipleAllocations`` (consumable capacity, off in v1.34) does not exist, as
  upstream with its default gates;
- the empty map for a missing domain is produced for every domain the expression names as a
  string literal (the C++ runtime takes no map with a default), so ``"x.example.com" in
  device.attributes`` is true when the expression itself names ``"x.example.com"``, and a domain
  computed at run time (``device.attributes["gpu." + "example.com"]``) that the device does not
  have is an error rather than an empty map;
- quantities and versions are represented as one-entry maps, so ``type(quantity("1"))`` is a map
  type, and a value of an unknown type (``dyn(1.5)``) fails when evaluated where upstream refuses
  to compile it;
- a quantity holds its value only: ``isInteger()`` and ``asInteger()`` answer by the value, while
  upstream answers by how the quantity was written (``quantity("1.0")``, ``quantity("1000m")`` and
  ``quantity("1.5Ki")`` are not integers there);
- some compile errors have other texts: ``q.sign()`` and ``"abc".reverse()`` are "undeclared
  reference" rather than "found no matching overload", an invalid regular expression in
  ``matches`` is found when evaluated;
- Kubernetes' other base libraries (``lists`` such as ``sum`` and ``isSorted``, the ``regex``
  extension's ``find``/``findAll``, ``url``, ``ip``, ``cidr``, ``format``) are not declared: a
  selector using them does not compile (``undeclared reference``);
- the runtime cost limit (``CELSelectorExpressionMaxCost``, 1,000,000) is not enforced: the C++
  runtime exposes no cost tracking. For every claim and DeviceClass that reached the API server
  the limit cannot be hit anyway: the API server's validation estimates each selector's worst-case
  cost under the API's size limits (at most 32 attributes and capacities per device, bounded
  strings) and refuses one above the same limit ("too complex, exceeds cost limit"), and the
  runtime cost never exceeds that estimate. Only selectors in ``simulate`` scenario files, which
  no API server validated, could run past it here.

Programs are compiled once per expression text and kept in a bounded LRU cache
(:class:`SelectorCache`, one per process), as upstream's ``cel.Cache``; failed compilations are
not cached, also as upstream.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import cachetools
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings

from kopf_scheduler.dra import quantity
from kopf_scheduler.dra.objects import ResourceSlice, object_version
from kopf_scheduler.dra.pools import Pool

_K = TypeVar("_K")
_V = TypeVar("_V")

QUANTITY_KEY = "kubernetes.Quantity"
"""The one key of the map that stands for a quantity (see the module docstring)."""
SEMVER_KEY = "kubernetes.Semver"
"""The one key of the map that stands for a semantic version."""

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

# ---------------------------------------------------------------------------------------------
# Quantities


def quantity_value(text: str) -> dict[str, str]:
    """The CEL value of the quantity ``text``; raises ValueError with upstream's text."""
    return _quantity(quantity.parse(text))


def _quantity(value: Fraction) -> dict[str, str]:
    return {QUANTITY_KEY: str(value)}


def _fraction(value: Any) -> Fraction:
    if isinstance(value, Mapping) and QUANTITY_KEY in value:
        return Fraction(value[QUANTITY_KEY])
    raise ValueError("no such overload")


def _as_int64(value: Fraction) -> int | None:
    if value.denominator != 1 or not _INT64_MIN <= value.numerator <= _INT64_MAX:
        return None
    return value.numerator


def _quantity_as_integer(target: Any) -> int:
    result = _as_int64(_fraction(target))
    if result is None:
        raise ValueError("cannot convert value to integer")
    return result


def _quantity_as_float(target: Any) -> float:
    value = _fraction(target)
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _sign(value: Fraction) -> int:
    return (value > 0) - (value < 0)


def _add(target: Any, other: Any) -> dict[str, str]:
    other_value = Fraction(other) if isinstance(other, int) else _fraction(other)
    return _quantity(_fraction(target) + other_value)


def _sub(target: Any, other: Any) -> dict[str, str]:
    other_value = Fraction(other) if isinstance(other, int) else _fraction(other)
    return _quantity(_fraction(target) - other_value)


# ---------------------------------------------------------------------------------------------
# Semantic versions (semver 2.0.0, as github.com/blang/semver/v4 parses them)

_NUMERIC = re.compile(r"^[0-9]+$")
_IDENTIFIER = re.compile(r"^[0-9A-Za-z-]+$")


@dataclass(frozen=True, slots=True)
class Version:
    """A parsed semantic version; build metadata is kept apart, as it never orders versions."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...]
    build: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse strictly; raise ValueError with blang/semver's message."""
        if not text:
            raise ValueError("Version string empty")
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise ValueError("No Major.Minor.Patch elements found")
        major = _version_number("major", parts[0])
        minor = _version_number("minor", parts[1])
        rest, plus, build_text = parts[2].partition("+")
        patch_text, dash, pre_text = rest.partition("-")
        patch = _version_number("patch", patch_text)
        pre = tuple(_pre_release(identifier) for identifier in pre_text.split(".")) if dash else ()
        build = tuple(build_text.split(".")) if plus else ()
        for identifier in build:
            if not identifier:
                raise ValueError("Build meta data is empty")
            if not _IDENTIFIER.match(identifier):
                raise ValueError(
                    f"Invalid character(s) found in build meta data {_go_quote(identifier)}"
                )
        return cls(major, minor, patch, pre, build)

    @classmethod
    def parse_normalized(cls, text: str) -> Version:
        """``semver(s, true)``: no ``v`` prefix, leading zeros dropped, a short version filled."""
        text = text.removeprefix("v")
        parts = text.split(".", 2)
        for index, part in enumerate(parts):
            if len(part) > 1:
                stripped = part.lstrip("0")
                if not stripped or not stripped[0].isdigit():
                    stripped = "0" + stripped
                parts[index] = stripped
        if len(parts) < 3:
            if any(sign in parts[-1] for sign in "+-"):
                raise ValueError("short version cannot contain PreRelease/Build meta data")
            parts.extend("0" for _ in range(3 - len(parts)))
        return cls.parse(".".join(parts))

    def compare(self, other: Version) -> int:
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            if isinstance(a, int) and isinstance(b, int):
                return -1 if a < b else 1
            if isinstance(a, int):
                return -1
            if isinstance(b, int):
                return 1
            return -1 if a < b else 1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def key(self) -> str:
        """The text that stands for this version in CEL: equal iff the versions compare equal."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(identifier) for identifier in self.pre)
        return text


def _go_quote(text: str) -> str:
    """``%q`` of Go's fmt for the strings that reach these messages."""
    return json.dumps(text, ensure_ascii=False)


def _version_number(label: str, part: str) -> int:
    if part and not _NUMERIC.match(part):
        raise ValueError(f"Invalid character(s) found in {label} number {_go_quote(part)}")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(
            f"{label.capitalize()} number must not contain leading zeroes {_go_quote(part)}"
        )
    if not part or int(part) >= 2**64:
        reason = "invalid syntax" if not part else "value out of range"
        raise ValueError(f"strconv.ParseUint: parsing {_go_quote(part)}: {reason}")
    return int(part)


def _pre_release(identifier: str) -> int | str:
    if not identifier:
        raise ValueError("Prerelease is empty")
    if _NUMERIC.match(identifier):
        if len(identifier) > 1 and identifier[0] == "0":
            raise ValueError(
                "Numeric PreRelease version must not contain leading zeroes "
                + _go_quote(identifier)
            )
        return int(identifier)
    if not _IDENTIFIER.match(identifier):
        raise ValueError(f"Invalid character(s) found in prerelease {_go_quote(identifier)}")
    return identifier


def semver_value(text: str, *, normalize: bool = False) -> dict[str, str]:
    """The CEL value of the version ``text``; raises ValueError with upstream's text."""
    version = Version.parse_normalized(text) if normalize else Version.parse(text)
    return {SEMVER_KEY: version.key()}


def _version(value: Any) -> Version:
    if isinstance(value, Mapping) and SEMVER_KEY in value:
        return Version.parse(value[SEMVER_KEY])
    raise ValueError("no such overload")


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        semver_value(text, normalize=normalize)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Functions shared by quantities and versions: one overload each, dispatched on the value.


def _compare(target: Any, other: Any) -> int:
    if isinstance(target, Mapping) and SEMVER_KEY in target:
        return _version(target).compare(_version(other))
    mine, theirs = _fraction(target), _fraction(other)
    return (mine > theirs) - (mine < theirs)


def _major(target: Any) -> int:
    return _version(target).major


def _minor(target: Any) -> int:
    return _version(target).minor


def _patch(target: Any) -> int:
    return _version(target).patch


_OPAQUE = cel.Type.Map(cel.Type.STRING, cel.Type.STRING)
_S, _B, _I = cel.Type.STRING, cel.Type.BOOL, cel.Type.INT


def _function(name: str, *overloads: cel.Overload) -> cel.FunctionDecl:
    return cel.FunctionDecl(name, list(overloads))


def _global(overload_id: str, result: cel.Type, params: list[cel.Type], impl: Any) -> cel.Overload:
    return cel.Overload(overload_id, result, params, impl=impl)


def _member(overload_id: str, result: cel.Type, params: list[cel.Type], impl: Any) -> cel.Overload:
    return cel.Overload(overload_id, result, params, is_member=True, impl=impl)


def _declarations() -> list[cel.FunctionDecl]:
    q = _OPAQUE
    return [
        _function("quantity", _global("string_to_quantity", q, [_S], quantity_value)),
        _function("isQuantity", _global("is_quantity_string", _B, [_S], quantity.is_valid)),
        _function(
            "semver",
            _global("string_to_semver", q, [_S], semver_value),
            _global(
                "string_bool_to_semver",
                q,
                [_S, _B],
                lambda text, normalize: semver_value(text, normalize=normalize),
            ),
        ),
        _function(
            "isSemver",
            _global("is_semver_string", _B, [_S], _is_semver),
            _global("is_semver_string_bool", _B, [_S, _B], _is_semver),
        ),
        # A global function, not a method: upstream declares it so (``sign(q)``, not ``q.sign()``).
        _function("sign", _global("quantity_sign", _I, [q], lambda t: _sign(_fraction(t)))),
        _function(
            "isInteger",
            _member("quantity_is_integer", _B, [q], lambda t: _as_int64(_fraction(t)) is not None),
        ),
        _function("asInteger", _member("quantity_get_int", _I, [q], _quantity_as_integer)),
        _function(
            "asApproximateFloat",
            _member("quantity_get_float", cel.Type.DOUBLE, [q], _quantity_as_float),
        ),
        _function(
            "add",
            _member("quantity_add", q, [q, q], _add),
            _member("quantity_add_int", q, [q, _I], _add),
        ),
        _function(
            "sub",
            _member("quantity_sub", q, [q, q], _sub),
            _member("quantity_sub_int", q, [q, _I], _sub),
        ),
        _function(
            "isGreaterThan",
            _member("opaque_is_greater_than", _B, [q, q], lambda t, o: _compare(t, o) == 1),
        ),
        _function(
            "isLessThan",
            _member("opaque_is_less_than", _B, [q, q], lambda t, o: _compare(t, o) == -1),
        ),
        _function("compareTo", _member("opaque_compare_to", _I, [q, q], _compare)),
        _function("major", _member("semver_major", _I, [q], _major)),
        _function("minor", _member("semver_minor", _I, [q], _minor)),
        _function("patch", _member("semver_patch", _I, [q], _patch)),
    ]


def _environment() -> cel.Env:
    return cel.NewEnv(
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings(version=2)],
        functions=_declarations(),
    )


# ---------------------------------------------------------------------------------------------
# Errors: the C++ runtime's status texts in cel-go's words.

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_MISSING_KEY = re.compile(r'^Key not found in map : "?(.*?)"?$')
_TYPE_NAMES = {
    "BOOL": "bool",
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
    "NULL": "null_type",
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "TYPE": "type",
}


def _status_text(text: str) -> str:
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text.strip()))


_INDEX_ERROR = re.compile(r"^Index error: index=(-?\d+) size=\d+$")
_RUNTIME_TEXTS = {"divide by zero": "division by zero"}


def _runtime_error_text(text: str) -> str:
    text = _status_text(text)
    missing = _MISSING_KEY.match(text)
    if missing is not None:
        return f"no such key: {missing[1]}"
    index = _INDEX_ERROR.match(text)
    if index is not None:
        return f"index out of bounds: {index[1]}"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    return _RUNTIME_TEXTS.get(text, text)


def _not_bool(value: Any, cel_type: cel.Type) -> str:
    """Upstream's text for a selector whose value is not a bool."""
    if isinstance(value, Mapping) and len(value) == 1:
        for key, name in ((SEMVER_KEY, "Semver"), (QUANTITY_KEY, "Quantity")):
            if key in value:
                return (
                    f"CEL result of type kubernetes.{name} could not be converted to bool: "
                    f"type conversion error from '{name}' to 'bool'"
                )
    type_name = _type_name(cel_type)
    if type_name == "string":
        detail = "unsupported native conversion from string to 'bool'"
    else:
        detail = f"unsupported type conversion from '{type_name}' to bool"
    return f"CEL result of type {type_name} could not be converted to bool: {detail}"


_ERROR_LINE = re.compile(r"^ERROR: <input>:\d+:\d+: (.*)$", re.MULTILINE)
_DYNAMIC_RANGE = "expression of type 'dyn' cannot be the range of a comprehension"


def _only_dynamic_ranges(text: str) -> bool:
    errors = _ERROR_LINE.findall(text)
    return bool(errors) and all(error.startswith(_DYNAMIC_RANGE) for error in errors)


def _type_name(cel_type: cel.Type) -> str:
    name = str(cel_type.name())
    if name in _TYPE_NAMES:
        return _TYPE_NAMES[name]
    return name.lower().replace("<", "(").replace(">", ")")


class SelectorError(Exception):
    """A selector failed to compile or to evaluate; the text is upstream's detail."""


# ---------------------------------------------------------------------------------------------
# Compiled programs

_STRING_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """What a selector sees of one device: ``device.driver``, attributes and capacity by domain.

    Built once per device (see :func:`device_input`); the maps are shared between evaluations
    and never changed.
    """

    driver: str
    attributes: Mapping[str, Mapping[str, Any]]
    capacity: Mapping[str, Mapping[str, Any]]


class Program:
    """One compiled selector; :meth:`matches` evaluates it for a device."""

    __slots__ = ("_domains", "_expression", "expression")

    def __init__(self, expression: str, compiled: cel.Expression) -> None:
        self.expression = expression
        self._expression = compiled
        # Every string literal the selector names could be a domain it looks up; a device
        # without that domain gets an empty map for it (see the module docstring).
        self._domains = frozenset(
            a if a else b for a, b in _STRING_LITERAL.findall(expression) if "\\" not in (a or b)
        )

    def matches(self, device: DeviceInput) -> bool:
        """Whether the device is selected; raises :class:`SelectorError` with upstream's text."""
        data = {
            "device": {
                "driver": device.driver,
                "attributes": self._with_empty_domains(device.attributes),
                "capacity": self._with_empty_domains(device.capacity),
            }
        }
        result = self._expression.eval(data=data)
        result_type = result.type()
        if result_type == cel.Type.ERROR:
            raise SelectorError(_runtime_error_text(str(result.value())))
        value = result.value()
        if not isinstance(value, bool):
            raise SelectorError(_not_bool(result.plain_value(), result_type))
        return value

    def _with_empty_domains(self, by_domain: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
        missing = self._domains.difference(by_domain)
        if not missing:
            return by_domain
        merged: dict[str, Mapping[str, Any]] = {domain: {} for domain in missing}
        merged.update(by_domain)
        return merged


@dataclass(frozen=True, slots=True)
class Compiled:
    """A compilation's outcome: the program, or upstream's error detail."""

    program: Program | None
    error: str | None


DeviceKey = tuple[str, str, int]
"""A device in one state: its slice's uid and resourceVersion, and its index there."""


class SelectorCache:
    """What selecting devices derives and may keep across scheduling attempts; one per process.

    Compiled programs by expression text (``maxsize`` of them), as upstream's ``cel.Cache``:
    failed compilations are not kept, so their error is computed again, as upstream. Beside
    them, bounded too, the parsed ResourceSlices, each device's selector answers and what
    selectors see of it, keyed by the slice's uid and resourceVersion (:data:`DeviceKey`): a
    slice that changes gets a new resourceVersion, so nothing stale is ever read. Least recently
    used entries go first; thread-safe.
    """

    def __init__(self, maxsize: int = 1024, *, devices: int = 65536) -> None:
        self._env = _environment()
        self._programs: cachetools.LRUCache[str, Program] = cachetools.LRUCache(maxsize=maxsize)
        self._inputs: cachetools.LRUCache[DeviceKey, DeviceInput] = cachetools.LRUCache(
            maxsize=devices
        )
        self._answers: cachetools.LRUCache[tuple[str, DeviceKey], bool] = cachetools.LRUCache(
            maxsize=devices * 4
        )
        self._slices: cachetools.LRUCache[tuple[str, str], ResourceSlice] = cachetools.LRUCache(
            maxsize=max(devices // 8, 1)
        )
        self._pools: cachetools.LRUCache[tuple[tuple[str, str], ...], list[Pool]] = (
            cachetools.LRUCache(maxsize=max(devices // 8, 1))
        )
        self._lock = threading.Lock()

    def resource_slice(self, raw: Mapping[str, Any]) -> ResourceSlice:
        """The parsed view of a ResourceSlice, parsed once per uid and resourceVersion.

        Raises :class:`~kopf_scheduler.model.errors.InvalidObjectError` for a malformed slice.
        """
        version = object_version(raw)
        if version is None:
            return ResourceSlice(raw)
        return self._memo(self._slices, version, lambda: ResourceSlice(raw))

    def pools(
        self,
        available: Sequence[ResourceSlice],
        gather: Callable[[Sequence[ResourceSlice]], list[Pool]],
    ) -> list[Pool]:
        """The pools of these slices: gathered once per set of slice versions."""
        versions = tuple(s.version for s in available)
        if not all(versions):
            return gather(available)
        key = tuple(v for v in versions if v is not None)
        return self._memo(self._pools, key, lambda: gather(available))

    def _memo(self, cache: cachetools.LRUCache[_K, _V], key: _K, make: Callable[[], _V]) -> _V:
        """``cache[key]``, made by ``make`` when missing; made outside the lock, so two
        threads may both make a missing entry and the second one kept wins."""
        with self._lock:
            known = cache.get(key)
        if known is None:
            known = make()
            with self._lock:
                cache[key] = known
        return known

    def device_input(self, key: DeviceKey) -> DeviceInput | None:
        with self._lock:
            return self._inputs.get(key)

    def remember_input(self, key: DeviceKey, inputs: DeviceInput) -> None:
        with self._lock:
            self._inputs[key] = inputs

    def answer(self, expression: str, key: DeviceKey) -> bool | None:
        """A selector's earlier answer for this device, if it is still known."""
        with self._lock:
            return self._answers.get((expression, key))

    def remember_answer(self, expression: str, key: DeviceKey, matches: bool) -> None:
        with self._lock:
            self._answers[(expression, key)] = matches

    def compile(self, expression: str) -> Compiled:
        """The program for ``expression``, compiled on first use."""
        with self._lock:
            program = self._programs.get(expression)
        if program is not None:
            return Compiled(program, None)
        try:
            compiled = self._env.compile(expression)
        except RuntimeError as error:
            text = _status_text(str(error))
            if not _only_dynamic_ranges(text):
                return Compiled(None, f"compilation failed: {text}")
            # The C++ checker rejects a comprehension over a value it only knows as dynamic
            # (``device.attributes["x"].exists(...)``), which upstream's typed environment
            # accepts; such an expression has no other error, so it runs unchecked.
            compiled = self._env.compile(expression, disable_check=True)
        output = compiled.return_type()
        if output not in (cel.Type.BOOL, cel.Type.DYN):
            return Compiled(
                None, f"must evaluate to bool or the unknown type, not {_type_name(output)}"
            )
        program = Program(expression, compiled)
        with self._lock:
            self._programs[expression] = program
        return Compiled(program, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._programs)


def device_input(
    driver: str,
    attributes: Mapping[str, Mapping[str, Any]],
    capacity: Mapping[str, Mapping[str, Any]],
) -> DeviceInput:
    """What selectors see of a device with these raw ``attributes`` and ``capacity``.

    Names without a domain go to the driver's domain. A version attribute that is not a valid
    semantic version, or an attribute with no known value, raises :class:`SelectorError` with
    upstream's text (it becomes a runtime error of the selector that looks at the device).
    """
    attributes_by_domain: dict[str, dict[str, Any]] = {}
    for name, attribute in attributes.items():
        domain, identifier = split_qualified_name(name, driver)
        attributes_by_domain.setdefault(domain, {})[identifier] = _attribute_value(name, attribute)
    capacity_by_domain: dict[str, dict[str, Any]] = {}
    for name, entry in capacity.items():
        domain, identifier = split_qualified_name(name, driver)
        value = entry.get("value") if isinstance(entry, Mapping) else None
        try:
            capacity_by_domain.setdefault(domain, {})[identifier] = _quantity(
                quantity.parse(str(value))
            )
        except ValueError as error:
            raise SelectorError(f"capacity {name}: {error}") from None
    return DeviceInput(driver, attributes_by_domain, capacity_by_domain)


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """``domain/id`` split at the first slash; a name without one is in ``default_domain``."""
    domain, slash, identifier = name.partition("/")
    if not slash:
        return default_domain, name
    return domain, identifier


def _attribute_value(name: str, attribute: Any) -> Any:
    if isinstance(attribute, Mapping):
        if attribute.get("int") is not None:
            return int(attribute["int"])
        if attribute.get("bool") is not None:
            return bool(attribute["bool"])
        if attribute.get("string") is not None:
            return str(attribute["string"])
        if attribute.get("version") is not None:
            try:
                return semver_value(str(attribute["version"]))
            except ValueError as error:
                raise SelectorError(f"attribute {name}: parse semantic version: {error}") from None
    raise SelectorError(f"attribute {name}: unsupported attribute value")
