app_name = "discovery"

urlpatterns: list = []
