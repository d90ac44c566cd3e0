from django.apps import AppConfig


class CommonConfig(AppConfig):
    name = "config"
    label = "common"
    verbose_name = "Herald"

    def ready(self) -> None:
        import django_stubs_ext
        from rest_framework import fields, generics, serializers, viewsets

        django_stubs_ext.monkeypatch(
            extra_classes=[
                serializers.Serializer,
                serializers.ModelSerializer,
                fields.Field,
                generics.GenericAPIView,
                viewsets.GenericViewSet,
            ]
        )
        import config.api.openapi  # noqa: F401  (registers OpenAPI extensions)
        from config.bounded import bound_pillow

        bound_pillow()
