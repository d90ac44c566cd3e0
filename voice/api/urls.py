app_name = "voice"

urlpatterns: list = []
