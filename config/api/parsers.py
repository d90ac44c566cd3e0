"""The JSON body parser of the API: DRF's, plus two inputs that must be a 400, not a crash.

- Nesting deeper than Python's recursion limit (``[[[[…]]]]``) raises ``RecursionError`` in the
  standard ``json`` module, which DRF does not catch.
- ``\\ud800`` escapes decode to unpaired surrogates: Python strings that cannot be encoded as
  UTF-8, so storing or echoing them fails later. RFC 8259 §8.2 leaves such strings undefined;
  we treat the body as malformed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - the body is nested too deeply.") from exc
        if not _valid_unicode(data):
            raise ParseError("JSON parse error - a string is not valid Unicode (lone surrogate).")
        return data


def _valid_unicode(data: Any) -> bool:
    pending = [data]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(node, dict):
            pending.extend(node.keys())
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return True
