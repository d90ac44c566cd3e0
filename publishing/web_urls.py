"""Browser pages of connected accounts, mounted at ``/connections/``."""

from django.urls import path

from publishing import web

app_name = "connections"

urlpatterns = [
    path("authorize/<str:state>", web.oauth_authorize, name="oauth-authorize"),
    path("result/<str:token>", web.oauth_result, name="oauth-result"),
]
