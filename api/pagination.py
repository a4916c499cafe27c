"""Limit/offset pagination with bounds: a huge limit or offset is refused or capped, never sent to SQL
(PostgreSQL's LIMIT/OFFSET are 64-bit, so an overlong number would be a database error, a 500).

The page is read first and counted only when it cannot tell the count itself: most lists fit in one
page, and a page shorter than the limit ends the list, so those requests make one query, not two."""

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

    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        self.limit = self.get_limit(request)
        if self.limit is None:
            return None
        self.offset = self.get_offset(request)
        page = list(queryset[self.offset : self.offset + self.limit])
        if len(page) < self.limit and (page or self.offset == 0):
            # The last page: everything before it plus what it holds (an empty page past offset 0
            # says nothing about where the list ends, so that one is counted).
            self.count = self.offset + len(page)
        else:
            self.count = self.get_count(queryset)
        if self.count > self.limit and self.template is not None:
            self.display_page_controls = True
        return page
