from django.urls import path

from reposts.api import views

app_name = "reposts"

urlpatterns = [
    path("repost-automation", views.RepostSettingsView.as_view(), name="repost-automation"),
    path("repost-account-grants", views.RepostGrantListView.as_view(), name="repost-grant-list"),
    path(
        "repost-account-grants/<str:grant_id>",
        views.RepostGrantDetailView.as_view(),
        name="repost-grant-detail",
    ),
]
