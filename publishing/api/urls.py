app_name = "publishing"

urlpatterns: list = []
