"""The event types in the OpenAPI document: one ``x-webhooks`` entry per type (the document is
OpenAPI 3.0, where webhooks are an extension that documentation renderers such as ReDoc show),
each with the body a webhook delivery and the event list carry."""

from __future__ import annotations

from typing import Any

from events.types import DESTINATION, EVENT_TYPES


def _data_schema(event_type: str, components: dict[str, Any]) -> dict[str, Any]:
    if EVENT_TYPES[event_type][1] == DESTINATION and "Destination" in components:
        return {
            "allOf": [
                {"$ref": "#/components/schemas/Destination"},
                {
                    "type": "object",
                    "properties": {"publication_id": {"type": "string", "format": "uuid"}},
                    "required": ["publication_id"],
                },
            ]
        }
    if "Publication" in components:
        return {"$ref": "#/components/schemas/Publication"}
    return {"type": "object"}


def _operation(event_type: str, components: dict[str, Any]) -> dict[str, Any]:
    when, data = EVENT_TYPES[event_type]
    return {
        "operationId": "event_" + event_type.replace(".", "_"),
        "summary": event_type,
        "description": f"{when} `data`: {data}. See docs/events.md.",
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string", "enum": [event_type]},
                            "timestamp": {"type": "string", "format": "date-time"},
                            "data": _data_schema(event_type, components),
                        },
                        "required": ["type", "timestamp", "data"],
                    }
                }
            },
        },
        "responses": {"200": {"description": "Received (any 2xx)."}},
    }


def postprocess_event_types(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    components = result.get("components", {}).get("schemas", {})
    result["x-webhooks"] = {
        event_type: {"post": _operation(event_type, components)} for event_type in EVENT_TYPES
    }
    return result
