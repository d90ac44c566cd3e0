from django.apps import AppConfig


class RepostsConfig(AppConfig):
    name = "reposts"
    verbose_name = "Repost automation"
