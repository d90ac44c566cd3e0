"""Names people give things (workspaces, organizations, voice profiles, themes, theme assets,
API tokens) at the API: :class:`NameField` applies the one cleaning rule of
:mod:`config.names` to an input serializer's field, its errors at the field's own location.
The services apply the same rule (``config.names.name_or_invalid``), so a name given through the
Django admin, a browser page or a management command is held to it too.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from config.names import REFUSED_CATEGORIES, InvalidName, clean_name, refused_characters

__all__ = ["REFUSED_CATEGORIES", "InvalidName", "NameField", "clean_name", "refused_characters"]


class NameField(serializers.CharField):
    """A name input: :func:`clean_name` applied, its errors at the field's own location."""

    def __init__(self, *, max_length: int, **kwargs: Any) -> None:
        self.name_max_length = max_length
        kwargs.setdefault("trim_whitespace", False)  # clean_name trims after normalizing
        kwargs.setdefault("min_length", 1)
        super().__init__(max_length=max_length, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, bool) or not isinstance(data, (str, int, float)):
            self.fail("invalid")  # as CharField: numbers are taken as their text
        try:
            return clean_name(str(data), max_length=self.name_max_length)
        except InvalidName as exc:
            raise serializers.ValidationError(str(exc)) from None
