from django.apps import AppConfig


class VoiceConfig(AppConfig):
    name = "voice"
