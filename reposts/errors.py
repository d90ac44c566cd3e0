from config.errors import ConflictError


class RepostGrantExistsError(ConflictError):
    """An active repost grant for this account and workspace already exists."""

    title = "Repost grant exists"
    code = "repost_grant_exists"
    default_detail = "An active repost grant for this account and workspace already exists."
