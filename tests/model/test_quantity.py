from fractions import Fraction

import pytest

from kopf_scheduler.model.quantity import QuantityError, milli_value, parse_quantity, whole_value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("100m", Fraction(1, 10), id="milli"),
        pytest.param("1.5", Fraction(3, 2), id="decimal"),
        pytest.param("2Gi", 2 * 2**30, id="binary-gi"),
        pytest.param("1Ki", 1024, id="binary-ki"),
        pytest.param("500M", 500 * 10**6, id="decimal-mega"),
        pytest.param("1e3", 1000, id="exponent"),
        pytest.param("1E-3", Fraction(1, 1000), id="negative-exponent"),
        pytest.param("0", 0, id="zero"),
        pytest.param(".5", Fraction(1, 2), id="leading-dot"),
        pytest.param("+2", 2, id="explicit-plus"),
        pytest.param("12n", Fraction(12, 10**9), id="nano"),
        pytest.param("3k", 3000, id="kilo"),
        pytest.param(4, 4, id="integer-value"),
        pytest.param(0.25, Fraction(1, 4), id="float-value"),
    ],
)
def test_parse_quantity(text: str | int | float, expected: Fraction | int) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("abc", id="letters"),
        pytest.param("1.5.5", id="two-dots"),
        pytest.param("10Kb", id="unknown-suffix"),
        pytest.param("1 Gi", id="inner-space"),
        pytest.param(" 1", id="leading-space"),
        pytest.param("Gi", id="suffix-only"),
        pytest.param(True, id="boolean"),
        pytest.param(None, id="null"),
        pytest.param([1], id="list"),
    ],
)
def test_malformed_quantity_names_the_field(text: object) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text, "spec.containers[0].resources.requests.cpu")
    assert info.value.field == "spec.containers[0].resources.requests.cpu"
    assert "spec.containers[0].resources.requests.cpu" in str(info.value)


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        pytest.param("100m", 100, 1, id="milli-rounds-up-to-one"),
        pytest.param("1.5", 1500, 2, id="fraction-rounds-up"),
        pytest.param("0.0001", 1, 1, id="sub-milli-rounds-up"),
        pytest.param("2Gi", 2 * 2**30 * 1000, 2 * 2**30, id="memory"),
    ],
)
def test_rounding_is_upward(text: str, milli: int, whole: int) -> None:
    assert milli_value(text) == milli
    assert whole_value(text) == whole
