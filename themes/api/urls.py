from django.urls import path

from themes.api import views

app_name = "themes"

urlpatterns = [
    path("themes", views.ThemeListView.as_view(), name="theme-list"),
    path("themes/built-ins", views.BuiltInThemeListView.as_view(), name="theme-built-ins"),
    path("themes/available", views.AvailableThemeListView.as_view(), name="theme-available"),
    path("themes/<str:theme_id>", views.ThemeDetailView.as_view(), name="theme-detail"),
    path("themes/<str:theme_id>/draft", views.ThemeDraftView.as_view(), name="theme-draft"),
    path("themes/<str:theme_id>/publish", views.ThemePublishView.as_view(), name="theme-publish"),
    path(
        "themes/<str:theme_id>/revisions",
        views.ThemeRevisionListView.as_view(),
        name="theme-revisions",
    ),
    path(
        "themes/<str:theme_id>/revisions/<str:revision>",
        views.ThemeRevisionDetailView.as_view(),
        name="theme-revision",
    ),
    path(
        "theme-settings/organization",
        views.OrganizationThemeDefaultView.as_view(),
        name="theme-settings-organization",
    ),
    path(
        "theme-assignments/<str:workspace_id>",
        views.WorkspaceThemeAssignmentView.as_view(),
        name="theme-assignment",
    ),
    path("theme-assets", views.ThemeAssetListView.as_view(), name="theme-asset-list"),
    path(
        "theme-assets/<str:asset_id>",
        views.ThemeAssetDetailView.as_view(),
        name="theme-asset-detail",
    ),
    path(
        "theme-assets/<str:asset_id>/content",
        views.ThemeAssetContentView.as_view(),
        name="theme-asset-content",
    ),
]
