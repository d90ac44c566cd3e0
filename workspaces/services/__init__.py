"""Writes for identity: organizations, workspaces, members, invitations, tokens, deletion, usage.

Every role, member-state, invitation and removal change writes an access-audit event in the
same transaction as the change itself.

One module per sub-domain: ``accounts`` (proof of the mailbox, display names), ``audit``
(access audit, instance administrator), ``workspaces``
(organizations and workspaces), ``members``, ``invitations``, ``api_tokens``, ``plans`` (limits
and usage) and ``deletion``. Callers use ``from workspaces import services`` and
``services.<name>``, or import the names from here.
"""

from workspaces.services.accounts import (
    account_from_verification_token,
    account_prove_mailbox,
    account_rename,
    account_verification_token,
)
from workspaces.services.api_tokens import api_token_create, api_token_revoke
from workspaces.services.audit import audit_record, require_instance_admin
from workspaces.services.deletion import (
    workspace_delete,
    workspace_deletion_blockers,
    workspace_deletion_preview,
)
from workspaces.services.invitations import (
    invitation_accept,
    invitation_create,
    invitation_issuer_may_grant,
    invitation_link_for_inviter,
    invitation_resend,
    invitation_revoke,
    invitation_sign_up,
    invitations_revoke_issued_by,
)
from workspaces.services.members import (
    organization_members_without_workspaces_leave,
    workspace_member_add,
    workspace_member_remove,
    workspace_member_update,
)
from workspaces.services.plans import (
    PLAN_METRICS,
    plan_check_current,
    plan_limit,
    usage_consume,
    usage_period,
)
from workspaces.services.workspaces import (
    WORKSPACE_CREATED,
    organization_create,
    organization_update,
    workspace_create,
    workspace_update,
)

__all__ = [
    "PLAN_METRICS",
    "WORKSPACE_CREATED",
    "account_from_verification_token",
    "account_prove_mailbox",
    "account_rename",
    "account_verification_token",
    "api_token_create",
    "api_token_revoke",
    "audit_record",
    "invitation_accept",
    "invitation_create",
    "invitation_issuer_may_grant",
    "invitation_link_for_inviter",
    "invitation_resend",
    "invitation_revoke",
    "invitation_sign_up",
    "invitations_revoke_issued_by",
    "organization_create",
    "organization_members_without_workspaces_leave",
    "organization_update",
    "plan_check_current",
    "plan_limit",
    "require_instance_admin",
    "usage_consume",
    "usage_period",
    "workspace_create",
    "workspace_delete",
    "workspace_deletion_blockers",
    "workspace_deletion_preview",
    "workspace_member_add",
    "workspace_member_remove",
    "workspace_member_update",
    "workspace_update",
]
