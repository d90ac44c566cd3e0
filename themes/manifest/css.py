"""The CSS-like value syntax of theme manifests (``docs/themes.md``): colors, lengths, durations,
easings and shadows, parsed into numbers so that bounds and contrast can be checked.

Parsers raise ``CssValueError`` with a message meant for the person who wrote the manifest.
Colors are resolved to sRGB (0-1 floats plus alpha) the way a browser would show them: OKLab and
OKLCH through the OKLab matrices, gamut-mapped by clipping; ``color-mix(in oklch, …)`` with
premultiplied alpha and the shorter hue arc (CSS Color 5).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MAX_CSS_LENGTH = 512
FORBIDDEN_FRAGMENTS = ("url(", ";", "{", "}", "<", ">", "@", "\r", "\n")
PX_PER_REM = 16.0
MAX_DURATION_MS = 2000.0


class CssValueError(ValueError):
    """A value that does not follow the manifest syntax."""


def check_css_text(value: str) -> None:
    """Rules every CSS-like string follows: non-empty, bounded, no injection fragments."""
    if not value.strip():
        raise CssValueError("Must not be empty.")
    if len(value) > MAX_CSS_LENGTH:
        raise CssValueError(f"At most {MAX_CSS_LENGTH} characters.")
    lowered = value.lower()
    for fragment in FORBIDDEN_FRAGMENTS:
        if fragment in lowered:
            shown = {"\r": "a carriage return", "\n": "a line feed"}.get(fragment, repr(fragment))
            raise CssValueError(f"Must not contain {shown}.")


# --- Numbers ---------------------------------------------------------------------------------

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER_RE = re.compile(rf"^{_NUMBER}$")
_PERCENT_RE = re.compile(rf"^({_NUMBER})%$")
_ANGLE_RE = re.compile(rf"^({_NUMBER})(deg|grad|rad|turn)?$")


def _number(token: str) -> float:
    if not _NUMBER_RE.match(token):
        raise CssValueError(f"{token!r} is not a number.")
    value = float(token)
    if not math.isfinite(value):
        raise CssValueError(f"{token!r} is not a finite number.")
    return value


def _number_or_percent(token: str, *, percent_of: float) -> float:
    match = _PERCENT_RE.match(token)
    if match:
        return float(match[1]) / 100.0 * percent_of
    return _number(token)


def _alpha(token: str) -> float:
    value = _number_or_percent(token, percent_of=1.0)
    return min(1.0, max(0.0, value))


def _hue(token: str) -> float:
    match = _ANGLE_RE.match(token)
    if not match:
        raise CssValueError(f"{token!r} is not a hue angle.")
    value = float(match[1])
    unit = match[2] or "deg"
    degrees = {"deg": 1.0, "grad": 0.9, "rad": 180.0 / math.pi, "turn": 360.0}[unit] * value
    return degrees % 360.0


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split on ``separator`` outside parentheses (``color-mix(in oklch, rgb(1, 2, 3) 40%, …)``)."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise CssValueError("Unbalanced parentheses.")
        if char == separator and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise CssValueError("Unbalanced parentheses.")
    parts.append("".join(current).strip())
    return parts


def _split_whitespace_top_level(text: str) -> list[str]:
    tokens: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char.isspace() and depth == 0:
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        tokens.append("".join(current))
    return tokens


def _function(value: str) -> tuple[str, str] | None:
    match = re.match(r"^([a-z-]+)\((.*)\)$", value.strip(), re.IGNORECASE | re.DOTALL)
    if not match:
        return None
    return match[1].lower(), match[2].strip()


# --- Colors ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rgba:
    """An sRGB color with gamma-encoded channels in [0, 1] and an alpha in [0, 1]."""

    r: float
    g: float
    b: float
    a: float = 1.0

    def over(self, ground: Rgba) -> Rgba:
        """This color composited on ``ground`` (source-over, in sRGB as browsers blend)."""
        if self.a >= 1.0:
            return self
        out_a = self.a + ground.a * (1.0 - self.a)
        if out_a <= 0:
            return Rgba(0.0, 0.0, 0.0, 0.0)

        def channel(top: float, bottom: float) -> float:
            return (top * self.a + bottom * ground.a * (1.0 - self.a)) / out_a

        return Rgba(
            channel(self.r, ground.r), channel(self.g, ground.g), channel(self.b, ground.b), out_a
        )

    def luminance(self) -> float:
        """WCAG 2 relative luminance (of the opaque color)."""

        def linear(channel: float) -> float:
            return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4

        return 0.2126 * linear(self.r) + 0.7152 * linear(self.g) + 0.0722 * linear(self.b)

    def hex(self) -> str:
        channels = [round(min(1.0, max(0.0, c)) * 255) for c in (self.r, self.g, self.b)]
        text = "#" + "".join(f"{c:02x}" for c in channels)
        if self.a < 1.0:
            text += f"{round(self.a * 255):02x}"
        return text


WHITE = Rgba(1.0, 1.0, 1.0)
BLACK = Rgba(0.0, 0.0, 0.0)
_NAMED = {"black": BLACK, "white": WHITE, "transparent": Rgba(0.0, 0.0, 0.0, 0.0)}
_HEX_RE = re.compile(r"^#([0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")


def contrast_ratio(foreground: Rgba, background: Rgba) -> float:
    """WCAG contrast of two opaque colors."""
    lighter, darker = sorted((foreground.luminance(), background.luminance()), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def parse_color(value: str, *, _depth: int = 0) -> Rgba:
    """Parse a manifest color (the grammar in ``docs/themes.md``)."""
    text = value.strip()
    lowered = text.lower()
    if lowered in _NAMED:
        return _NAMED[lowered]
    if text.startswith("#"):
        return _parse_hex(text)
    function = _function(text)
    if function is None:
        raise CssValueError(
            "Not a color: use #rgb, #rrggbb(aa), rgb(), oklch(), oklab(), color-mix(in oklch, …), "
            "black, white or transparent."
        )
    name, body = function
    if name in ("rgb", "rgba"):
        return _parse_rgb(body)
    if name == "oklch":
        lightness, chroma, hue, alpha = _parse_ok_components(body, hue_last=True)
        return oklch_to_rgba(lightness, chroma, hue, alpha)
    if name == "oklab":
        lightness, a, b, alpha = _parse_ok_components(body, hue_last=False)
        return oklab_to_rgba(lightness, a, b, alpha)
    if name == "color-mix":
        if _depth >= 3:
            raise CssValueError("color-mix() is nested too deeply.")
        return _parse_color_mix(body, depth=_depth + 1)
    raise CssValueError(f"Unsupported color function {name}().")


def _parse_hex(text: str) -> Rgba:
    if not _HEX_RE.match(text):
        raise CssValueError("A hex color is #rgb, #rgba, #rrggbb or #rrggbbaa.")
    digits = text[1:]
    if len(digits) in (3, 4):
        digits = "".join(d * 2 for d in digits)
    channels = [int(digits[i : i + 2], 16) / 255.0 for i in range(0, len(digits), 2)]
    return Rgba(*channels)


def _components(body: str) -> tuple[list[str], str | None]:
    """``a b c / alpha`` or ``a, b, c[, alpha]`` → ([a, b, c], alpha)."""
    if "," in body:
        parts = [part.strip() for part in body.split(",")]
        if len(parts) not in (3, 4) or any(not part for part in parts):
            raise CssValueError("Expected three components and an optional alpha.")
        return parts[:3], (parts[3] if len(parts) == 4 else None)
    main, slash, alpha = body.partition("/")
    parts = main.split()
    if len(parts) != 3 or (slash and not alpha.strip()):
        raise CssValueError("Expected three components and an optional '/ alpha'.")
    return parts, (alpha.strip() if slash else None)


def _parse_rgb(body: str) -> Rgba:
    parts, alpha = _components(body)
    channels = []
    for part in parts:
        value = _number_or_percent(part, percent_of=255.0)
        channels.append(min(255.0, max(0.0, value)) / 255.0)
    r, g, b = channels  # _components gives exactly three
    return Rgba(r, g, b, a=_alpha(alpha) if alpha is not None else 1.0)


def _parse_ok_components(body: str, *, hue_last: bool) -> tuple[float, float, float, float]:
    if "," in body:
        raise CssValueError("oklch() and oklab() take space-separated components.")
    parts, alpha = _components(body)
    lightness = min(1.0, max(0.0, _number_or_percent(parts[0], percent_of=1.0)))
    if hue_last:
        chroma = max(0.0, _number_or_percent(parts[1], percent_of=0.4))
        third = _hue(parts[2])
        return lightness, chroma, third, _alpha(alpha) if alpha is not None else 1.0
    a = _number_or_percent(parts[1], percent_of=0.4)
    b = _number_or_percent(parts[2], percent_of=0.4)
    return lightness, a, b, _alpha(alpha) if alpha is not None else 1.0


def _parse_color_mix(body: str, *, depth: int) -> Rgba:
    parts = split_top_level(body)
    if len(parts) != 3 or parts[0].split() != ["in", "oklch"]:
        raise CssValueError("Use color-mix(in oklch, <color> [p%], <color> [p%]).")
    colors: list[Rgba] = []
    weights: list[float | None] = []
    for part in parts[1:]:
        tokens = _split_whitespace_top_level(part)
        percentage: float | None = None
        last = _PERCENT_RE.match(tokens[-1]) if len(tokens) > 1 else None
        first = _PERCENT_RE.match(tokens[0]) if len(tokens) > 1 and last is None else None
        if last:
            percentage = float(last[1])
            tokens = tokens[:-1]
        elif first:
            percentage = float(first[1])
            tokens = tokens[1:]
        if len(tokens) != 1:
            raise CssValueError(
                "Each color-mix() argument is one color and an optional percentage."
            )
        if percentage is not None and not 0.0 <= percentage <= 100.0:
            raise CssValueError("color-mix() percentages are between 0% and 100%.")
        colors.append(parse_color(tokens[0], _depth=depth))
        weights.append(percentage)
    p1, p2 = weights
    if p1 is None:  # neither given: 50% each; one given: the other is the rest
        p1 = 50.0 if p2 is None else 100.0 - p2
    if p2 is None:
        p2 = 100.0 - p1
    total = p1 + p2
    if total <= 0:
        raise CssValueError("color-mix() percentages must not add up to zero.")
    alpha_scale = min(1.0, total / 100.0)
    return _mix_oklch(colors[0], colors[1], p2 / total, alpha_scale)


def _mix_oklch(first: Rgba, second: Rgba, amount: float, alpha_scale: float) -> Rgba:
    l1, c1, h1 = rgba_to_oklch(first)
    l2, c2, h2 = rgba_to_oklch(second)
    if c1 < 1e-4:
        h1 = h2  # a grey has no hue (a "powerless" component): take the other's
    if c2 < 1e-4:
        h2 = h1
    delta = h2 - h1
    if delta > 180:
        h1 += 360
    elif delta < -180:
        h2 += 360
    alpha = first.a * (1 - amount) + second.a * amount
    if alpha <= 0:
        return Rgba(0.0, 0.0, 0.0, 0.0)
    lightness = (l1 * first.a * (1 - amount) + l2 * second.a * amount) / alpha
    chroma = (c1 * first.a * (1 - amount) + c2 * second.a * amount) / alpha
    hue = (h1 * (1 - amount) + h2 * amount) % 360
    return oklch_to_rgba(lightness, chroma, hue, alpha * alpha_scale)


def _encode(channel: float) -> float:
    channel = min(1.0, max(0.0, channel))
    return 12.92 * channel if channel <= 0.0031308 else 1.055 * channel ** (1 / 2.4) - 0.055


def _decode(channel: float) -> float:
    return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4


def _oklab_to_linear(lightness: float, a: float, b: float) -> tuple[float, float, float]:
    l_ = (lightness + 0.3963377774 * a + 0.2158037573 * b) ** 3
    m_ = (lightness - 0.1055613458 * a - 0.0638541728 * b) ** 3
    s_ = (lightness - 0.0894841775 * a - 1.2914855480 * b) ** 3
    return (
        4.0767416621 * l_ - 3.3077115913 * m_ + 0.2309699292 * s_,
        -1.2684380046 * l_ + 2.6097574011 * m_ - 0.3413193965 * s_,
        -0.0041960863 * l_ - 0.7034186147 * m_ + 1.7076147010 * s_,
    )


def oklab_to_rgba(lightness: float, a: float, b: float, alpha: float = 1.0) -> Rgba:
    red, green, blue = _oklab_to_linear(lightness, a, b)
    return Rgba(_encode(red), _encode(green), _encode(blue), alpha)


def oklch_to_rgba(lightness: float, chroma: float, hue: float, alpha: float = 1.0) -> Rgba:
    radians = math.radians(hue)
    return oklab_to_rgba(lightness, chroma * math.cos(radians), chroma * math.sin(radians), alpha)


def oklch_in_gamut(lightness: float, chroma: float, hue: float) -> Rgba:
    """The sRGB color nearest to ``oklch(L C H)`` at the same lightness and hue: chroma is
    reduced until it fits (how the built-in palettes are computed)."""
    low, high = 0.0, chroma
    radians = math.radians(hue)
    for _ in range(24):
        channels = _oklab_to_linear(lightness, high * math.cos(radians), high * math.sin(radians))
        if all(-1e-6 <= c <= 1 + 1e-6 for c in channels):
            break
        middle = (low + high) / 2
        channels = _oklab_to_linear(
            lightness, middle * math.cos(radians), middle * math.sin(radians)
        )
        if all(-1e-6 <= c <= 1 + 1e-6 for c in channels):
            low = middle
        else:
            high = middle
    else:
        high = low
    return oklch_to_rgba(lightness, high, hue)


def rgba_to_oklch(color: Rgba) -> tuple[float, float, float]:
    red, green, blue = _decode(color.r), _decode(color.g), _decode(color.b)
    l_ = max(0.0, 0.4122214708 * red + 0.5363325363 * green + 0.0514459929 * blue) ** (1 / 3)
    m_ = max(0.0, 0.2119034982 * red + 0.6806995451 * green + 0.1073969566 * blue) ** (1 / 3)
    s_ = max(0.0, 0.0883024619 * red + 0.2817188376 * green + 0.6299787005 * blue) ** (1 / 3)
    lightness = 0.2104542553 * l_ + 0.7936177850 * m_ - 0.0040720468 * s_
    a = 1.9779984951 * l_ - 2.4285922050 * m_ + 0.4505937099 * s_
    b = 0.0259040371 * l_ + 0.7827717662 * m_ - 0.8086757660 * s_
    return lightness, math.hypot(a, b), math.degrees(math.atan2(b, a)) % 360


# --- Lengths, durations, easings, shadows ----------------------------------------------------

_LENGTH_RE = re.compile(rf"^({_NUMBER})(px|rem|em|%|vw|vh)$")
ABSOLUTE_UNITS = {"px": 1.0, "rem": PX_PER_REM, "em": PX_PER_REM}


@dataclass(frozen=True)
class Length:
    value: float
    unit: str  # "px", "rem", "em", "%", "vw", "vh" ("px" for a bare 0)

    @property
    def px(self) -> float | None:
        """The length in CSS pixels (1 rem = 1 em = 16 px), or None for a relative length."""
        factor = ABSOLUTE_UNITS.get(self.unit)
        return None if factor is None else self.value * factor


def parse_length(
    value: str, *, units: tuple[str, ...] = ("px", "rem", "em", "%", "vw", "vh")
) -> Length:
    text = value.strip()
    if text == "0":
        return Length(0.0, "px")
    match = _LENGTH_RE.match(text)
    if not match or match[2] not in units:
        raise CssValueError(f"Not a length: use a number with one of {', '.join(units)}, or 0.")
    return Length(float(match[1]), match[2])


def check_length(
    value: str,
    *,
    minimum: float,
    maximum: float,
    units: tuple[str, ...] = ("px", "rem", "em", "%", "vw", "vh"),
    allow_clamp: bool = True,
) -> None:
    """A length or ``clamp(min, preferred, max)`` within [minimum, maximum] CSS pixels.

    A relative length (%, vw, vh) cannot be bounded on its own: it is accepted as the preferred
    value of a ``clamp()`` whose absolute minimum and maximum are within the bounds.
    """
    text = value.strip()
    function = _function(text)
    if function is not None:
        name, body = function
        if name != "clamp" or not allow_clamp:
            raise CssValueError(
                "Not a length: use a number with a unit, 0, or clamp(min, preferred, max)."
            )
        parts = split_top_level(body)
        if len(parts) != 3:
            raise CssValueError("clamp() takes three lengths: clamp(min, preferred, max).")
        low, preferred, high = (parse_length(part, units=units) for part in parts)
        if low.px is None or high.px is None:
            raise CssValueError("The minimum and maximum of clamp() must be px, rem or em.")
        _within(low.px, minimum, maximum)
        _within(high.px, minimum, maximum)
        if low.px > high.px:
            raise CssValueError("The minimum of clamp() is larger than its maximum.")
        if preferred.px is not None:
            _within(preferred.px, minimum, maximum)
        return
    length = parse_length(text, units=units)
    if length.px is None:
        raise CssValueError(
            f"A {length.unit} length cannot be bounded: use clamp(min, {text}, max) with px, rem or em bounds."
        )
    _within(length.px, minimum, maximum)


def _within(px: float, minimum: float, maximum: float) -> None:
    if not minimum <= px <= maximum:
        raise CssValueError(
            f"Must be between {_fmt(minimum)} px and {_fmt(maximum)} px (is {_fmt(px)} px)."
        )


def _fmt(number: float) -> str:
    return f"{number:g}"


_DURATION_RE = re.compile(rf"^({_NUMBER})(ms|s)$")


def parse_duration_ms(value: str) -> float:
    match = _DURATION_RE.match(value.strip())
    if not match:
        raise CssValueError("A duration is a number of ms or s, e.g. 150ms.")
    milliseconds = float(match[1]) * (1000.0 if match[2] == "s" else 1.0)
    if not 0 <= milliseconds <= MAX_DURATION_MS:
        raise CssValueError("A duration is between 0 ms and 2 s.")
    return milliseconds


EASING_KEYWORDS = ("linear", "ease", "ease-in", "ease-out", "ease-in-out")


def check_easing(value: str) -> None:
    text = value.strip()
    if text in EASING_KEYWORDS:
        return
    function = _function(text)
    if function is None or function[0] != "cubic-bezier":
        raise CssValueError(
            f"An easing is one of {', '.join(EASING_KEYWORDS)} or cubic-bezier(x1, y1, x2, y2)."
        )
    parts = [part.strip() for part in function[1].split(",")]
    if len(parts) != 4:
        raise CssValueError("cubic-bezier() takes four numbers.")
    x1, y1, x2, y2 = (_number(part) for part in parts)
    if not (0 <= x1 <= 1 and 0 <= x2 <= 1):
        raise CssValueError("The x values of cubic-bezier() are between 0 and 1.")
    if abs(y1) > 10 or abs(y2) > 10:
        raise CssValueError("The y values of cubic-bezier() are between -10 and 10.")


def check_shadow(value: str) -> None:
    """``none`` or ``x y blur spread <color>`` with |x|, |y|, |spread| ≤ 256 px, blur 0-256 px."""
    text = value.strip()
    if text == "none":
        return
    tokens = text.split(None, 4)
    if len(tokens) != 5:
        raise CssValueError("A shadow is none, or 'x y blur spread <color>'.")
    for name, token, low in (
        ("x", tokens[0], -256.0),
        ("y", tokens[1], -256.0),
        ("blur", tokens[2], 0.0),
        ("spread", tokens[3], -256.0),
    ):
        length = parse_length(token, units=("px",))
        if not low <= length.value <= 256.0:
            raise CssValueError(f"The shadow {name} is between {_fmt(low)} px and 256 px.")
    parse_color(tokens[4])
