"""The manifest's CSS-like values refused with the message a theme author reads (each a 422 at
its field through the manifest validation), and the color arithmetic browsers do: hex alpha,
mixing transparent colors, and hue mixing along the shorter arc."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from themes.manifest import css

LENGTH_BOUNDS = {"minimum": 0.0, "maximum": 100.0}


def check_length(value: str) -> None:
    css.check_length(value, **LENGTH_BOUNDS)


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (css.check_css_text, "x" * 513, "At most 512 characters."),
        (css.check_css_text, "   ", "Must not be empty."),
        (css.check_css_text, "a\nb", "Must not contain a line feed."),
        (css.parse_color, "rgb(1e999 0 0)", "'1e999' is not a finite number."),
        (css.parse_color, "rgb(x 0 0)", "'x' is not a number."),
        (css.parse_color, "oklch(0.5 0.1 abc)", "'abc' is not a hue angle."),
        (
            css.parse_color,
            "color-mix(in oklch, #fff 120%, #000)",
            "color-mix() percentages are between 0% and 100%.",
        ),
        (
            css.parse_color,
            "color-mix(in oklch, #fff 0%, #000 0%)",
            "color-mix() percentages must not add up to zero.",
        ),
        (
            check_length,
            "min(1px, 2px)",
            "Not a length: use a number with a unit, 0, or clamp(min, preferred, max).",
        ),
        (
            check_length,
            "clamp(1px, 2px)",
            "clamp() takes three lengths: clamp(min, preferred, max).",
        ),
        (
            check_length,
            "clamp(1vw, 2px, 3px)",
            "The minimum and maximum of clamp() must be px, rem or em.",
        ),
        (
            check_length,
            "clamp(9px, 2vw, 3px)",
            "The minimum of clamp() is larger than its maximum.",
        ),
        (check_length, "clamp(1px, 200px, 3px)", "Must be between 0 px and 100 px (is 200 px)."),
        (check_length, "clamp(1px, 2px, 7rem)", "Must be between 0 px and 100 px (is 112 px)."),
        (
            check_length,
            "5vw",
            "A vw length cannot be bounded: use clamp(min, 5vw, max) with px, rem or em bounds.",
        ),
        (css.parse_duration_ms, "3s", "A duration is between 0 ms and 2 s."),
        (css.parse_duration_ms, "150", "A duration is a number of ms or s, e.g. 150ms."),
        (css.check_easing, "cubic-bezier(0, 1, 1)", "cubic-bezier() takes four numbers."),
        (
            css.check_easing,
            "cubic-bezier(1.5, 0, 0, 1)",
            "The x values of cubic-bezier() are between 0 and 1.",
        ),
        (
            css.check_easing,
            "cubic-bezier(0, 11, 0, 1)",
            "The y values of cubic-bezier() are between -10 and 10.",
        ),
    ],
)
def test_a_bad_value_is_refused_with_its_reason(
    check: Callable[[str], object], value: str, message: str
) -> None:
    with pytest.raises(css.CssValueError) as excinfo:
        check(value)
    assert str(excinfo.value) == message


def test_lengths_within_bounds_pass() -> None:
    for value in ("0", "12px", "2rem", "clamp(16px, 4vw, 40px)", "clamp(1px, 50px, 3rem)"):
        check_length(value)


def test_hex_keeps_its_alpha_and_transparent_mixes_stay_transparent() -> None:
    half_white = css.parse_color("#ffffff80")
    assert half_white.a == pytest.approx(128 / 255)
    assert half_white.hex() == "#ffffff80"
    assert css.parse_color("color-mix(in oklch, transparent, transparent)").a == 0.0


def test_hues_mix_along_the_shorter_arc() -> None:
    """350° and 10° meet at 0° (red), not at 180° (teal), whichever comes first."""
    expected = css.parse_color("oklch(0.5 0.1 0)").hex()
    for first, second in ((350, 10), (10, 350)):
        mixed = css.parse_color(
            f"color-mix(in oklch, oklch(0.5 0.1 {first}), oklch(0.5 0.1 {second}))"
        )
        assert mixed.hex() == expected
