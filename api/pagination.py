"""Limit/offset pagination with bounds: a limit or offset that is not a whole number in range is a
400 naming it (an overlong number never reaches SQL, where PostgreSQL's 64-bit LIMIT/OFFSET would make
it a database error); a limit over the largest page is served as the largest page. The schema states
the same bounds.

The page is read first and counted only when it cannot tell the count itself: most lists fit in one
page, and a page shorter than the limit ends the list, so those requests make one query, not two."""

from rest_framework.pagination import LimitOffsetPagination

from api.fields import whole_number

MAX_OFFSET = 10**9


class Pagination(LimitOffsetPagination):
    max_limit = 1000

    def get_limit(self, request) -> int | None:
        raw = request.query_params.get(self.limit_query_param)
        if raw is None:
            return self.default_limit
        return min(whole_number(raw, self.limit_query_param, 1), self.max_limit)

    def get_offset(self, request) -> int:
        raw = request.query_params.get(self.offset_query_param)
        if raw is None:
            return 0
        return whole_number(raw, self.offset_query_param, 0, MAX_OFFSET)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"]["minimum"] = 1
                parameter["description"] += f" At most {self.max_limit}: a larger limit is served as {self.max_limit}."
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"].update(minimum=0, maximum=MAX_OFFSET)
        return parameters

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
