from django.apps import AppConfig


class NetemConfig(AppConfig):
    name = "netem"
    verbose_name = "Lab"
