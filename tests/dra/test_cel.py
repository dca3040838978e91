"""CEL device selectors: Kubernetes' environment, value for value and error for error.

Each row was evaluated by upstream's own ``k8s.io/dynamic-resource-allocation/cel`` v0.34.10
(``cel.NewCache(...).GetOrCompile(expression).DeviceMatches(...)``) on the same device, and the
row holds what it answered: the match, the runtime error, or the compile error. The deviations
the module docstring of :mod:`kopf_scheduler.dra.cel` lists are not rows here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kopf_scheduler.dra.cel import SelectorCache, SelectorError, device_input


@dataclass(frozen=True)
class Runtime:
    text: str


@dataclass(frozen=True)
class Compile:
    text: str


DEVICE: dict[str, Any] = {
    "driver": "driver-a",
    "attributes": {
        "model": {"string": "a100"},
        "count": {"int": 4},
        "healthy": {"bool": True},
        "driverVersion": {"version": "2.1.0-rc.1+build.5"},
        "other.example.com/zone": {"string": "z1"},
    },
    "capacity": {"memory": {"value": "16Gi"}, "other.example.com/bandwidth": {"value": "1500m"}},
}
BAD_VERSION_DEVICE: dict[str, Any] = {
    "driver": "driver-a",
    "attributes": {"v": {"version": "1.02.3"}},
    "capacity": {},
}

ROWS: list[tuple[str, dict[str, Any], bool | Runtime | Compile]] = [
    ('device.driver == "driver-a"', DEVICE, True),
    ('device.attributes["driver-a"].model == "a100"', DEVICE, True),
    (
        'device.attributes["driver-a"].count > 3 && device.attributes["driver-a"].healthy',
        DEVICE,
        True,
    ),
    ('device.attributes["other.example.com"].zone == "z1"', DEVICE, True),
    ('device.attributes["gpu.example.com"].model == "a100"', DEVICE, Runtime("no such key: model")),
    ('has(device.attributes["gpu.example.com"].model)', DEVICE, False),
    ('size(device.attributes["gpu.example.com"]) == 0', DEVICE, True),
    ('device.attributes["driver-a"].missing == 1', DEVICE, Runtime("no such key: missing")),
    (
        'device.attributes["driver-a"].model',
        DEVICE,
        Runtime(
            "CEL result of type string could not be converted to bool: unsupported native conversion from string to 'bool'"
        ),
    ),
    ('device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0', DEVICE, True),
    ('device.capacity["driver-a"].memory == quantity("16384Mi")', DEVICE, True),
    ('device.capacity["driver-a"].memory.isGreaterThan(quantity("17G"))', DEVICE, True),
    ('device.capacity["other.example.com"].bandwidth.isLessThan(quantity("2"))', DEVICE, True),
    ('device.capacity["other.example.com"].bandwidth.asApproximateFloat() == 1.5', DEVICE, True),
    ('device.capacity["other.example.com"].bandwidth.isInteger()', DEVICE, False),
    (
        'device.capacity["other.example.com"].bandwidth.asInteger() == 1',
        DEVICE,
        Runtime("cannot convert value to integer"),
    ),
    ('quantity("1.5G").isGreaterThan(quantity("1G"))', DEVICE, True),
    ('quantity("10").asInteger() == 10', DEVICE, True),
    ('quantity("200K") == quantity("200k")', DEVICE, Runtime("unable to parse quantity's suffix")),
    ('isQuantity("200K") || isQuantity("Mi")', DEVICE, True),
    ('isQuantity("1.3Gi") && isQuantity("10000k")', DEVICE, True),
    ('quantity("1").add(quantity("2")) == quantity("3")', DEVICE, True),
    (
        'quantity("5").sub(2) == quantity("3") && quantity("5").add(2) == quantity("7")',
        DEVICE,
        True,
    ),
    ('quantity("1Ki").compareTo(quantity("1k")) == 1', DEVICE, True),
    ('semver("1.2.3").isGreaterThan(semver("1.2.0"))', DEVICE, True),
    (
        'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
        DEVICE,
        True,
    ),
    ('semver("v1.2", true) == semver("1.2.0")', DEVICE, True),
    ('semver("v01.02.03", true).compareTo(semver("1.2.3")) == 0', DEVICE, True),
    ('isSemver("1.2") || isSemver("v1.2.3")', DEVICE, False),
    ('isSemver("v1.2", true) && isSemver("1.2.3-alpha.1+b")', DEVICE, True),
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', DEVICE, True),
    ('semver("1.0.0-alpha.2").isGreaterThan(semver("1.0.0-alpha.10"))', DEVICE, False),
    ('semver("1.0.0-alpha.beta").isGreaterThan(semver("1.0.0-alpha.1"))', DEVICE, True),
    ('semver("1.0.0+build") == semver("1.0.0")', DEVICE, True),
    (
        'semver("01.2.3") == semver("1.2.3")',
        DEVICE,
        Runtime('Major number must not contain leading zeroes "01"'),
    ),
    ('semver("1.2") == semver("1.2.0")', DEVICE, Runtime("No Major.Minor.Patch elements found")),
    ('device.attributes["driver-a"].driverVersion.isGreaterThan(semver("2.0.0"))', DEVICE, True),
    ('device.attributes["driver-a"].driverVersion == semver("2.1.0-rc.1")', DEVICE, True),
    ('device.attributes["driver-a"].driverVersion.minor() == 1', DEVICE, True),
    (
        'cel.bind(dra, device.attributes["driver-a"], dra.model == "a100" && dra.count == 4)',
        DEVICE,
        True,
    ),
    ('"ABC".lowerAscii() == "abc" && "a.b.c".split(".").size() == 3', DEVICE, True),
    (
        'device.driver.startsWith("driver-") && device.driver.matches("^driver-[a-z]$")',
        DEVICE,
        True,
    ),
    ('["a", "b"].exists(x, x == device.attributes["driver-a"].model)', DEVICE, False),
    ('device.attributes["driver-a"].exists(k, k == "model")', DEVICE, True),
    ('"abc"', DEVICE, Compile("must evaluate to bool or the unknown type, not string")),
    (
        "1 + ",
        DEVICE,
        Compile(
            "compilation failed: ERROR: <input>:1:5: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 1 + \n | ....^"
        ),
    ),
    (
        "noSuchVar == 1",
        DEVICE,
        Compile(
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in container '')\n | noSuchVar == 1\n | ^"
        ),
    ),
    ("1/0 == 1", DEVICE, Runtime("division by zero")),
    ('"x".size()', DEVICE, Compile("must evaluate to bool or the unknown type, not int")),
    (
        'device.attributes["driver-a"].count + 1',
        DEVICE,
        Compile("must evaluate to bool or the unknown type, not int"),
    ),
    (
        'device.driver == "driver-a"',
        BAD_VERSION_DEVICE,
        Runtime(
            'attribute v: parse semantic version: Minor number must not contain leading zeroes "02"'
        ),
    ),
    ('isQuantity("200K")', DEVICE, False),
    ('isQuantity("Mi")', DEVICE, True),
    ('isQuantity("1,3G")', DEVICE, False),
    ('isQuantity("Three")', DEVICE, False),
    ('isQuantity("")', DEVICE, False),
    ('isQuantity(".")', DEVICE, True),
    ('isQuantity("-")', DEVICE, True),
    ('isQuantity("1.")', DEVICE, True),
    ('isQuantity("1e")', DEVICE, False),
    ('isQuantity("5Ki")', DEVICE, True),
    ('isQuantity("1e3")', DEVICE, True),
    ('isQuantity("1E-3")', DEVICE, True),
    ('isQuantity("+.5")', DEVICE, True),
    ('isQuantity("1.5.3")', DEVICE, False),
    ('quantity("Mi") == quantity("0")', DEVICE, True),
    ('quantity("1.") == quantity("1")', DEVICE, True),
    ('quantity("1e3") == quantity("1k")', DEVICE, True),
    ('quantity("0.0000000001") == quantity("1n")', DEVICE, True),
    ('quantity("-0.0000000001") == quantity("-1n")', DEVICE, True),
    (
        'quantity("1,3G") == quantity("1")',
        DEVICE,
        Runtime(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        ),
    ),
    (
        'quantity("Three") == quantity("1")',
        DEVICE,
        Runtime(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        ),
    ),
    (
        'quantity("") == quantity("1")',
        DEVICE,
        Runtime(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        ),
    ),
    ('quantity("1e-3").asApproximateFloat() == 0.001', DEVICE, True),
    ('sign(quantity("-1")) == -1 && sign(quantity("0")) == 0', DEVICE, True),
    ('quantity("9223372036854775807").add(1).isInteger()', DEVICE, False),
    ('quantity("1m").isInteger()', DEVICE, False),
    (
        'semver("1.2.3-01") == semver("1.2.3")',
        DEVICE,
        Runtime('Numeric PreRelease version must not contain leading zeroes "01"'),
    ),
    ('semver("1.2.3-") == semver("1.2.3")', DEVICE, Runtime("Prerelease is empty")),
    ('semver("1.2.3+") == semver("1.2.3")', DEVICE, Runtime("Build meta data is empty")),
    (
        'semver("1.2.3+a_b") == semver("1.2.3")',
        DEVICE,
        Runtime('Invalid character(s) found in build meta data "a_b"'),
    ),
    (
        'semver("1.2.x") == semver("1.2.3")',
        DEVICE,
        Runtime('Invalid character(s) found in patch number "x"'),
    ),
    (
        'semver("1..3") == semver("1.2.3")',
        DEVICE,
        Runtime('strconv.ParseUint: parsing "": invalid syntax'),
    ),
    ('semver("") == semver("1.2.3")', DEVICE, Runtime("Version string empty")),
    ('semver("1.2.3-a..b") == semver("1.2.3")', DEVICE, Runtime("Prerelease is empty")),
    ('semver("1.2.3-rc.1+b.2").isLessThan(semver("1.2.3"))', DEVICE, True),
    ('semver("1.2.3-alpha").compareTo(semver("1.2.3-alpha.1")) == -1', DEVICE, True),
    ('semver("1.2.3-1").isLessThan(semver("1.2.3-a"))', DEVICE, True),
    (
        'semver("v1.2.3") == semver("1.2.3")',
        DEVICE,
        Runtime('Invalid character(s) found in major number "v1"'),
    ),
    (
        'semver("1.2-rc", true) == semver("1.2.0")',
        DEVICE,
        Runtime("short version cannot contain PreRelease/Build meta data"),
    ),
    (
        'device.attributes["driver-a"].count',
        DEVICE,
        Runtime(
            "CEL result of type int could not be converted to bool: unsupported type conversion from 'int' to bool"
        ),
    ),
    ("1 % 0 == 1", DEVICE, Runtime("modulus by zero")),
    ("9223372036854775807 + 1 > 0", DEVICE, Runtime("integer overflow")),
    ("[1][5] == 1", DEVICE, Runtime("index out of bounds: 5")),
    ('device.attributes["driver-a"].model > 1', DEVICE, Runtime("no such overload")),
    ('{"a": 1}["b"] == 1', DEVICE, Runtime("no such key: b")),
    ("device.attributes.size() > 0", DEVICE, True),
    ('"a100" in device.attributes["driver-a"]', DEVICE, False),
    ('device.attributes["driver-a"].model.matches("a[0-9]+")', DEVICE, True),
    ('cel.bind(x, 1, x == 1) && cel.bind(y, "a", y.size() == 1)', DEVICE, True),
    ('"other.example.com" in device.attributes', DEVICE, True),
    ('device.capacity["gpu.example.com"].size() == 0', DEVICE, True),
    ('device.attributes["driver-a"].all(k, k != "")', DEVICE, True),
    ('device.attributes["driver-a"].model.upperAscii() == "A100"', DEVICE, True),
    ('"a,b".split(",")[1] == "b"', DEVICE, True),
    ('"%s-%d".format(["a", 1]) == "a-1"', DEVICE, True),
    ('device.attributes["driver-a"].model.indexOf("1") == 1', DEVICE, True),
    (
        'device.driver == "driver-a"',
        BAD_VERSION_DEVICE,
        Runtime(
            'attribute v: parse semantic version: Minor number must not contain leading zeroes "02"'
        ),
    ),
]

SELECTORS = SelectorCache()


def _evaluate(expression: str, device: dict[str, Any]) -> bool | Runtime | Compile:
    compiled = SELECTORS.compile(expression)
    if compiled.program is None:
        return Compile(compiled.error or "")
    try:
        inputs = device_input(device["driver"], device["attributes"], device["capacity"])
        return compiled.program.matches(inputs)
    except SelectorError as error:
        return Runtime(str(error))


@pytest.mark.parametrize(("expression", "device", "expected"), ROWS, ids=[row[0] for row in ROWS])
def test_as_upstream(
    expression: str, device: dict[str, Any], expected: bool | Runtime | Compile
) -> None:
    assert _evaluate(expression, device) == expected


def test_compiled_programs_are_kept_up_to_the_bound() -> None:
    cache = SelectorCache(maxsize=2)
    first = cache.compile('device.driver == "a"').program
    cache.compile('device.driver == "b"')
    assert cache.compile('device.driver == "a"').program is first
    cache.compile('device.driver == "c"')
    assert len(cache) == 2
    cache.compile("1 +")
    assert len(cache) == 2, "a failed compilation is not kept"
