app_name = "readiness"

urlpatterns: list = []
