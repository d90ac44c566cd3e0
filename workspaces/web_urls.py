"""Browser pages of workspaces.web: invitations, settings, password reset (no namespace: Django's
password-reset views reverse their own names)."""

from __future__ import annotations

from django.urls import path

from workspaces import web

urlpatterns = [
    path("invitations/<str:token>/", web.invitation_page, name="invitation-page"),
    path("settings/", web.settings_index, name="settings"),
    path("settings/profile/", web.settings_profile, name="settings-profile"),
    path("settings/password/", web.SettingsPasswordView.as_view(), name="settings-password"),
    path("password-reset/", web.HeraldPasswordResetView.as_view(), name="password_reset"),
    path(
        "password-reset/sent/",
        web.HeraldPasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password-reset/<uidb64>/<token>/",
        web.HeraldPasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "password-reset/done/",
        web.HeraldPasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
]
