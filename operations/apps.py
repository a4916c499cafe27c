from django.apps import AppConfig, apps


class OperationsConfig(AppConfig):
    name = "operations"
    verbose_name = "Operations"

    def ready(self) -> None:
        """Register the queue adapters this installation has (the setting picks one of them), and answer
        the registry's question of who holds a device through a value about to be edited."""
        from operations import queue
        from operations.holders import holding_through
        from operations.thread_queue import ThreadQueue
        from registry import in_use

        in_use.answer_with(holding_through)

        queue.register(ThreadQueue())
        if apps.is_installed("procrastinate.contrib.django"):
            from operations.procrastinate_queue import ProcrastinateQueue

            queue.register(ProcrastinateQueue())
