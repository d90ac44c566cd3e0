from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Identity and workspaces"

    def ready(self) -> None:
        from django.contrib import admin

        from workspaces.signin import AdminSignInForm

        # /admin/login/ checks passwords too: it spends the same failed-authentication budget
        # as /login/ and bearer tokens (workspaces/signin.py).
        admin.site.login_form = AdminSignInForm
