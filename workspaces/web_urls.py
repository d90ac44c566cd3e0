"""Browser pages of workspaces: sign-in, sign-out and the developer settings
(``workspaces.web_session``); invitations, settings and password reset (``workspaces.web``). No
namespace: Django's password-reset views reverse their own names."""

from __future__ import annotations

from django.urls import path

from workspaces import web, web_session

urlpatterns = [
    path("login/", web_session.HeraldLoginView.as_view(), name="login"),
    path("logout/", web_session.logout_view, name="logout"),
    path("settings/developer/", web_session.developer_settings, name="developer-settings"),
    path("invitations/<str:token>/", web.invitation_page, name="invitation-page"),
    path("settings/", web.settings_index, name="settings"),
    path("settings/profile/", web.settings_profile, name="settings-profile"),
    path("settings/password/", web.SettingsPasswordView.as_view(), name="settings-password"),
    path("settings/verify-email/", web.settings_verify_email, name="settings-verify-email"),
    path("verify-email/<str:token>/", web.verify_email, name="verify-email"),
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
    path("", web_session.home, name="home"),
]
