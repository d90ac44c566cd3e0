from config.errors import ConflictError, PermissionDeniedError


class LastAdminError(ConflictError):
    code = "last_admin"
    default_detail = "A workspace must keep at least one active admin."


class InvitationNotPendingError(ConflictError):
    code = "invitation_not_pending"
    default_detail = "The invitation is no longer pending."


class RecentAuthenticationRequiredError(PermissionDeniedError):
    code = "recent_authentication_required"
    default_detail = "Sign in again (or send current_password) to confirm this operation."


class WorkspaceDeletionBlockedError(ConflictError):
    code = "deletion_blocked"
    default_detail = "The workspace cannot be deleted while blockers remain."
