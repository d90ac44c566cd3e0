from django.urls import path

from workspaces.api import views

app_name = "workspaces"

urlpatterns = [
    path("me", views.MeView.as_view(), name="me"),
    path("organizations", views.OrganizationListView.as_view(), name="organization-list"),
    path(
        "organizations/<str:organization_id>",
        views.OrganizationDetailView.as_view(),
        name="organization-detail",
    ),
    path("workspaces", views.WorkspaceListView.as_view(), name="workspace-list"),
    path(
        "workspaces/<str:workspace_id>",
        views.WorkspaceDetailView.as_view(),
        name="workspace-detail",
    ),
    path(
        "workspaces/<str:workspace_id>/usage",
        views.WorkspaceUsageView.as_view(),
        name="workspace-usage",
    ),
    path(
        "workspaces/<str:workspace_id>/deletion-preview",
        views.WorkspaceDeletionPreviewView.as_view(),
        name="workspace-deletion-preview",
    ),
    path(
        "workspaces/<str:workspace_id>/members", views.MemberListView.as_view(), name="member-list"
    ),
    path(
        "workspaces/<str:workspace_id>/members/<str:user_id>",
        views.MemberDetailView.as_view(),
        name="member-detail",
    ),
    path(
        "workspaces/<str:workspace_id>/invitations",
        views.InvitationListView.as_view(),
        name="invitation-list",
    ),
    path(
        "workspaces/<str:workspace_id>/access-audit",
        views.AccessAuditView.as_view(),
        name="access-audit",
    ),
    path("invitations/accept", views.InvitationAcceptView.as_view(), name="invitation-accept"),
    path(
        "invitations/<str:invitation_id>/resend",
        views.InvitationResendView.as_view(),
        name="invitation-resend",
    ),
    path(
        "invitations/<str:invitation_id>",
        views.InvitationDetailView.as_view(),
        name="invitation-detail",
    ),
    path("api-tokens", views.ApiTokenListView.as_view(), name="api-token-list"),
    path("api-tokens/<str:token_id>", views.ApiTokenDetailView.as_view(), name="api-token-detail"),
]
