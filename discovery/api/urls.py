from django.urls import path

from discovery.api import views

app_name = "discovery"

urlpatterns = [
    path(
        "publication-opportunities/discover",
        views.DiscoverView.as_view(),
        name="publication-opportunities-discover",
    ),
]
