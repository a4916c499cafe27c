"""What the engine's raw-SQL migrations share: statements run on PostgreSQL only, in the schema Django
uses (SQLite has no triggers of this kind, nor the tables they fill)."""

from collections.abc import Callable


def on_postgres(statements: Callable[..., list[str]]) -> Callable:
    """A RunPython function running statements(apps, schema), schema quoted, on PostgreSQL only."""
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT quote_ident(current_schema())")
            schema = cursor.fetchone()[0]
        for statement in statements(apps, schema):
            schema_editor.execute(statement)

    return run
