"""Admin for publishing: read-only. Credentials are never displayed; nothing is deleted here
(publications keep their destinations and delivery events; accounts are disconnected and media
removed through the API). The delivery overview shows operators whether the dispatcher ticks
and how old the oldest overdue work is."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, Min
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone

from config.admin import ReadOnlyAdmin
from publishing.models import (
    Account,
    Destination,
    Media,
    Publication,
    PublicationEvent,
    SchedulerHeartbeat,
)


@admin.register(Account)
class AccountAdmin(ReadOnlyAdmin):
    list_display = ("username", "provider", "workspace", "status", "instance_url", "created_at")
    list_filter = ("provider", "status")
    list_select_related = ("workspace",)
    search_fields = ("username", "external_id", "workspace__name")
    exclude = ("credentials_encrypted",)


class DestinationInline(admin.TabularInline[Destination, Publication]):
    model = Destination
    extra = 0
    can_delete = False
    fields = (
        "account",
        "profile",
        "status",
        "attempts",
        "next_attempt_at",
        "external_id",
        "error_kind",
        "error_message",
        "action",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Publication)
class PublicationAdmin(ReadOnlyAdmin):
    list_display = ("id", "workspace", "status", "scheduled_at", "created_at")
    list_filter = ("status",)
    list_select_related = ("workspace",)
    search_fields = ("id", "workspace__name", "text")
    inlines = (DestinationInline,)


@admin.register(PublicationEvent)
class PublicationEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "kind", "status", "publication_id", "detail")
    list_filter = ("kind",)


@admin.register(Media)
class MediaAdmin(ReadOnlyAdmin):
    list_display = ("name", "workspace", "mime_type", "size_bytes", "created_at")
    list_select_related = ("workspace",)


@admin.register(SchedulerHeartbeat)
class DeliveryOverviewAdmin(ReadOnlyAdmin):
    """The changelist is the delivery overview."""

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        now = timezone.now()
        heartbeat = SchedulerHeartbeat.objects.filter(name="dispatcher").first()
        by_status = dict(
            Destination.objects.values_list("status")
            .annotate(n=Count("pk"))
            .values_list("status", "n")
        )
        oldest_overdue = Destination.objects.filter(
            status__in=[Destination.Status.QUEUED, Destination.Status.RETRY_WAIT],
            next_attempt_at__lt=now,
        ).aggregate(oldest=Min("next_attempt_at"))["oldest"]
        context = {
            **self.admin_site.each_context(request),
            "title": "Delivery overview",
            "last_tick_at": heartbeat.last_tick_at if heartbeat else None,
            "tick_age_seconds": (now - heartbeat.last_tick_at).total_seconds()
            if heartbeat
            else None,
            "by_status": sorted(by_status.items()),
            "oldest_overdue_seconds": (now - oldest_overdue).total_seconds()
            if oldest_overdue
            else 0,
        }
        return TemplateResponse(request, "admin/publishing/delivery_overview.html", context)
