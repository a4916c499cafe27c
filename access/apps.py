from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "access"
    verbose_name = "Access"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from access import writers

        # Every connection names this process to the database's write trail until a request names its principal.
        connection_created.connect(writers.name_process, dispatch_uid="flexzone-writers")
