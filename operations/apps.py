from django.apps import AppConfig, apps


class OperationsConfig(AppConfig):
    name = "operations"
    verbose_name = "Operations"

    def ready(self) -> None:
        """Register the queue adapters this installation has (the setting picks one of them)."""
        from operations import queue
        from operations.thread_queue import ThreadQueue

        queue.register(ThreadQueue())
        if apps.is_installed("procrastinate.contrib.django"):
            from operations.procrastinate_queue import ProcrastinateQueue

            queue.register(ProcrastinateQueue())
