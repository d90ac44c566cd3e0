"""What workspace deletion must know about publishing: data lost, and delivery in flight."""

from __future__ import annotations

from publishing.models import Account, Destination, Media, Publication
from publishing.services import uploads
from workspaces.lifecycle import Blocker
from workspaces.models import Workspace

IN_FLIGHT = (
    Destination.Status.QUEUED,
    Destination.Status.SENDING,
    Destination.Status.RETRY_WAIT,
    Destination.Status.AMBIGUOUS,
    Destination.Status.SCHEDULED,
)


def data_summary(workspace: Workspace) -> dict[str, int]:
    return {
        "connected_accounts": Account.objects.filter(workspace=workspace)
        .exclude(status=Account.Status.DISCONNECTED)
        .count(),
        "publications": Publication.objects.filter(workspace=workspace).count(),
        "media": Media.objects.filter(workspace=workspace).count(),
        "media_bytes": uploads.workspace_media_bytes(workspace),
    }


def blockers(workspace: Workspace) -> list[Blocker]:
    pending = Destination.objects.filter(
        publication__workspace=workspace, status__in=IN_FLIGHT
    ).count()
    if pending:
        return [
            Blocker(
                "pending_deliveries",
                f"{pending} destination(s) are scheduled or being delivered; cancel them or wait.",
            )
        ]
    return []
