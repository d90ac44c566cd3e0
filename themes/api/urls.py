app_name = "themes"

urlpatterns: list = []
