"""Limit/offset pagination with bounds: a huge limit or offset is refused or capped, never sent to SQL
(PostgreSQL's LIMIT/OFFSET are 64-bit, so an overlong number would be a database error, a 500)."""

from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 10**9


class Pagination(LimitOffsetPagination):
    max_limit = 1000

    def get_offset(self, request) -> int:
        offset = super().get_offset(request)
        if offset > MAX_OFFSET:
            raise exceptions.ValidationError({self.offset_query_param: [f"At most {MAX_OFFSET}."]})
        return offset
