"""A clear error for commands that read the catalogue before ``manage.py migrate`` ran."""

from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def require_migrated(database: str = DEFAULT_DB_ALIAS) -> None:
    """Raise ``CommandError`` naming the fix if ``database`` has unapplied migrations.

    Without it a command on a fresh or outdated database fails with the backend's
    "no such table" / "column does not exist".
    """
    connection = connections[database]
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in pending[:3])
        more = f" and {len(pending) - 3} more" if len(pending) > 3 else ""
        raise CommandError(
            f"the database {connection.settings_dict['NAME']} is not migrated ({len(pending)} "
            f"migrations not applied: {names}{more}); run `manage.py migrate` first"
        )
