"""The two kinds of admin page every app builds on.

- ``ReadOnlyAdmin``: rows are listed and shown, never added, changed or deleted here; their
  changes go through the API, whose services check and audit them.
- ``ServiceAdmin`` with ``ServiceForm``: the one way an admin page writes, through the same
  service as the API. The form's write is one service call, made once, when the form is
  validated (in place of the model's own checks): whatever the service refuses shows as a form
  error (at the field its 422 ``location`` names, else above the form), and nothing is written
  twice. ``save_model`` then
  goes on with the row the service saved instead of saving the form's object. The page runs in
  one transaction that is rolled back unless the page saves, so a write whose page fails
  afterwards (an invalid inline form) leaves nothing behind.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models, router, transaction
from django.http import HttpRequest, HttpResponse

from config.errors import DomainError, FieldValidationError

# Set on the request by ServiceAdmin.save_model: the page saved, its service write is kept.
_SAVED = "_herald_service_saved"


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """Lists and shows rows; adds, changes and deletes none."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ServiceForm(forms.ModelForm[Any]):
    """A model form whose write is one service call (``call_service``), made once its fields
    are parsed (``clean_<field>`` and ``clean`` included); the saved row is kept in ``saved``."""

    request: HttpRequest  # set by ServiceAdmin.get_form
    saved: models.Model | None = None

    def call_service(self) -> models.Model:
        """Write through the service, with ``self.request.user`` as the actor; return the row."""
        raise NotImplementedError

    def _post_clean(self) -> None:
        """In place of the model form's own checks of its instance: the service validates the
        row as for the API, and writes it. (Those checks would repeat the service's in other
        words, and, run after the write, would find the new row a duplicate of itself.)"""
        if self.errors:
            return
        try:
            self.saved = self.call_service()
        except FieldValidationError as exc:
            for error in exc.errors:
                self.add_error(self._field_at(str(error["location"])), error["message"])
        except DomainError as exc:
            self.add_error(None, exc.detail)

    def _field_at(self, location: str) -> str | None:
        """The form field a 422 location names (``body.checks[0].name`` names ``checks``), or
        ``None`` for the form as a whole."""
        name = location.removeprefix("body.").split(".")[0].split("[")[0]
        return name if name in self.fields else None


class ServiceAdmin(admin.ModelAdmin[Any]):
    """Adds (``add_form``) and changes (``form``) through ``ServiceForm``s; no generic delete,
    which would bypass the services."""

    add_form: type[ServiceForm] | None = None
    change_readonly_fields: tuple[str, ...] = ()

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None and self.add_form is not None:
            kwargs["form"] = self.add_form
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"request": request})

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.change_readonly_fields if obj is not None else ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        with transaction.atomic(using=router.db_for_write(self.model)):
            response = super().changeform_view(request, object_id, form_url, extra_context)
            if request.method == "POST" and not getattr(request, _SAVED, False):
                transaction.set_rollback(True)  # the page shows errors: keep no write
        return response

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        """Take the row the form's service call saved: the admin's log entry, message and
        redirect name it."""
        saved = form.saved
        for field in obj._meta.concrete_fields:
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding = False
        obj._state.db = saved._state.db
        setattr(request, _SAVED, True)
