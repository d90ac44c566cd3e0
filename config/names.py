"""Names people give things (workspaces, organizations, voice profiles, themes, theme assets,
API tokens) and people's display names (:func:`clean_display_name`: optional, at most 80
characters): one cleaning rule, applied by the services (:func:`name_or_invalid`) whatever calls
them (the API, the Django admin, browser pages, management commands), and by the API's input
serializers through ``config.api.names.NameField``.

A name is shown to people and compared with other names, so two names that look the same must
be the same string:

1. it must be a string;
2. it is normalized to Unicode NFKC (a fullwidth ``\uff22rand`` is ``Brand``, a ligature
   ``\ufb01`` is ``fi``), and that normalized form is what is stored and compared: where names are unique
   (case-insensitively, by the database's ``Lower``), NFKC-equal names clash;
3. surrounding spaces, tabs and line breaks are trimmed (after 2, which turns exotic spaces
   into plain ones);
4. it may not contain invisible or control characters: Unicode categories ``Cc`` (control),
   ``Cf`` (format: zero-width spaces and joiners U+200B..U+200F, bidirectional embeddings,
   overrides and isolates U+202A..U+202E and U+2066..U+2069, U+2060..U+2064, the byte order mark
   U+FEFF, soft hyphen...), ``Cs`` (lone surrogates), and line or paragraph separators
   (``Zl``, ``Zp``);
5. it has between 1 and ``max_length`` characters (after 2 and 3).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from config.errors import FieldValidationError

REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_TRIMMED = " \t\n\r\x0b\x0c"


class InvalidName(ValueError):
    """The name is invalid; the message says why (it names the offending code point)."""


def refused_characters(text: str) -> list[str]:
    """The characters of ``text`` a name may not contain (in order, without repeats)."""
    found: list[str] = []
    for char in text:
        if unicodedata.category(char) in REFUSED_CATEGORIES and char not in found:
            found.append(char)
    return found


def clean_name(value: Any, *, max_length: int) -> str:
    """The stored form of a name (see the module docstring), or :class:`InvalidName`."""
    if not isinstance(value, str):
        raise InvalidName("Must be a string.")
    # Only ordinary whitespace is trimmed: str.strip() would also drop (and so hide) separators
    # and controls such as U+0085, U+001C..U+001F, U+2028 and U+2029 at either end.
    text = unicodedata.normalize("NFKC", value).strip(_TRIMMED)
    refused = refused_characters(text)
    if refused:
        points = ", ".join(f"U+{ord(char):04X}" for char in refused[:5])
        raise InvalidName(
            f"Must not contain invisible, bidirectional-control or control characters ({points})."
        )
    if not text:
        raise InvalidName("This field may not be blank.")
    if len(text) > max_length:
        raise InvalidName(f"At most {max_length} characters (this has {len(text)}).")
    return text


def name_or_invalid(value: Any, *, max_length: int, location: str = "body.name") -> str:
    """:func:`clean_name` for a service: a 422 ``FieldValidationError`` at ``location``."""
    try:
        return clean_name(value, max_length=max_length)
    except InvalidName as exc:
        raise FieldValidationError.at(location, str(exc)) from None


# --- Display names ---------------------------------------------------------------------------

DISPLAY_NAME_MAX_LENGTH = 80  # the longest workspace name: shown beside it in pages and e-mails


def clean_display_name(value: Any) -> str:
    """A person's display name: the same rule as any name (:func:`clean_name`) and at most
    :data:`DISPLAY_NAME_MAX_LENGTH` characters, but optional: blank (or only spaces) is ``""``."""
    if isinstance(value, str) and not value.strip(_TRIMMED):
        return ""
    return clean_name(value, max_length=DISPLAY_NAME_MAX_LENGTH)


def display_name_or_invalid(value: Any, *, location: str = "body.name") -> str:
    """:func:`clean_display_name` for a service: a 422 ``FieldValidationError`` at ``location``."""
    try:
        return clean_display_name(value)
    except InvalidName as exc:
        raise FieldValidationError.at(location, str(exc)) from None


def quoted(text: str) -> str:
    """``text`` as a quoted string for prose (e-mails): refused characters dropped, quotes and
    backslashes escaped, so a name can never read as the sentence around it."""
    kept = "".join(char for char in text if unicodedata.category(char) not in REFUSED_CATEGORIES)
    return '"' + kept.replace("\\", "\\\\").replace('"', '\\"') + '"'
