"""What workspace deletion must know about repost automation: the data that goes with it."""

from __future__ import annotations

from django.db.models import Q

from reposts.models import RepostExecution, RepostGrant, RepostPolicy
from workspaces.models import Workspace


def data_summary(workspace: Workspace) -> dict[str, int]:
    return {
        "repost_policies": RepostPolicy.objects.filter(workspace=workspace).count(),
        # Grants either way: this workspace's through other accounts, and others' through its own.
        "repost_grants": RepostGrant.objects.filter(revoked_at__isnull=True)
        .filter(Q(source_workspace=workspace) | Q(target_account__workspace=workspace))
        .count(),
        "repost_executions": RepostExecution.objects.filter(workspace=workspace).count(),
    }
