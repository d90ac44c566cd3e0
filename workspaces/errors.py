from config.errors import ConflictError, PermissionDeniedError


class LastAdminError(ConflictError):
    """A workspace must keep at least one active admin."""

    title = "Last admin"
    code = "last_admin"
    default_detail = "A workspace must keep at least one active admin."


class InvitationNotPendingError(ConflictError):
    """The invitation was already accepted, revoked, or has expired."""

    title = "Invitation not pending"
    code = "invitation_not_pending"
    default_detail = "The invitation is no longer pending."


class InvitationAccountExistsError(ConflictError):
    # No code of its own (so no new problem type): only the invitation page catches it, to ask
    # the person to sign in and accept.
    default_detail = "An account with the invited e-mail address exists; sign in to accept."


class RecentAuthenticationRequiredError(PermissionDeniedError):
    """Sign in again, or send current_password, to confirm this operation."""

    title = "Recent authentication required"
    code = "recent_authentication_required"
    default_detail = "Sign in again (or send current_password) to confirm this operation."


class WorkspaceDeletionBlockedError(ConflictError):
    """The workspace has deletion blockers; see its deletion preview."""

    title = "Deletion blocked"
    code = "deletion_blocked"
    default_detail = "The workspace cannot be deleted while blockers remain."
