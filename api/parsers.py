"""The API's one body parser: JSON, whatever its depth or shape a clear 400.

Python's `json` reads nested arrays and objects recursively: a body of 50,000 `[` raised a
RecursionError, which no handler knew, and the request answered 500. Every refusal of a body is a
`ParseError` the error handler (api/errors.py) answers in the one error shape, naming the field `body`
and the rule: `json` (not JSON at all) or `max_depth` (nested deeper than `MAX_DEPTH`).
"""

from __future__ import annotations

import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 64  # levels of arrays and objects: the API's deepest body (a V1 invoke's) uses 3


class BodyRefused(ParseError):
    """A body this service does not read, with the rule it breaks."""

    def __init__(self, detail: str, rule: str) -> None:
        super().__init__(detail)
        self.rule = rule


def depth_over(text: str, limit: int) -> bool:
    """Whether `text` nests arrays or objects deeper than `limit` (brackets inside strings not counted),
    found in one pass without recursion."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, with the depth bounded before anything is parsed."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", "utf-8")
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise BodyRefused(f"The request body is not {encoding} text: {exc}.", "json") from None
        if depth_over(text, MAX_DEPTH):
            raise BodyRefused(f"The request body is nested deeper than {MAX_DEPTH} levels of arrays and objects; "
                              "nothing was done.", "max_depth")
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except ValueError as exc:
            raise BodyRefused(f"The request body is not valid JSON: {exc}.", "json") from None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")
