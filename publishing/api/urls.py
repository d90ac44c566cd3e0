from django.urls import path

from publishing.api import posting_queue, uploads, views

app_name = "publishing"

urlpatterns = [
    path(
        "account-providers", views.AccountProviderCatalogueView.as_view(), name="account-providers"
    ),
    path("accounts", views.AccountListView.as_view(), name="account-list"),
    path("accounts/connect", views.AccountConnectView.as_view(), name="account-connect"),
    path("accounts/oauth/callback", views.OAuthCallbackView.as_view(), name="oauth-callback"),
    path(
        "accounts/choices/<str:choice_id>",
        views.ConnectionChoiceView.as_view(),
        name="connection-choice",
    ),
    path("accounts/<str:account_id>", views.AccountDetailView.as_view(), name="account-detail"),
    path(
        "accounts/<str:account_id>/destination-options",
        views.DestinationOptionsView.as_view(),
        name="destination-options",
    ),
    path("capabilities", views.CapabilitiesView.as_view(), name="capabilities"),
    path("meta/deauthorize", views.MetaDeauthorizeView.as_view(), name="meta-deauthorize"),
    path("meta/data-deletion", views.MetaDataDeletionView.as_view(), name="meta-data-deletion"),
    path(
        "meta/data-deletion/<str:confirmation_code>",
        views.MetaDataDeletionStatusView.as_view(),
        name="meta-data-deletion-status",
    ),
    path("media", views.MediaListView.as_view(), name="media-list"),
    path("media/<str:media_id>", views.MediaDetailView.as_view(), name="media-detail"),
    path("media/<str:media_id>/content", views.MediaContentView.as_view(), name="media-content"),
    path("uploads", uploads.UploadListView.as_view(), name="upload-list"),
    path("uploads/<str:upload_id>", uploads.UploadDetailView.as_view(), name="upload-detail"),
    path("publications", views.PublicationListView.as_view(), name="publication-list"),
    path(
        "publications/<str:publication_id>",
        views.PublicationDetailView.as_view(),
        name="publication-detail",
    ),
    path(
        "publications/<str:publication_id>/schedule",
        views.PublicationScheduleView.as_view(),
        name="publication-schedule",
    ),
    path(
        "publications/<str:publication_id>/queue",
        posting_queue.PublicationQueueView.as_view(),
        name="publication-queue",
    ),
    path(
        "workspaces/<str:workspace_id>/posting-schedule",
        posting_queue.PostingScheduleView.as_view(),
        name="posting-schedule",
    ),
    path(
        "workspaces/<str:workspace_id>/calendar-feed",
        posting_queue.CalendarFeedView.as_view(),
        name="calendar-feed",
    ),
    path(
        "publications/<str:publication_id>/publish-now",
        views.PublicationPublishNowView.as_view(),
        name="publication-publish-now",
    ),
    path(
        "publications/<str:publication_id>/cancel",
        views.PublicationCancelView.as_view(),
        name="publication-cancel",
    ),
    path(
        "publications/<str:publication_id>/retry-failed",
        views.PublicationRetryFailedView.as_view(),
        name="publication-retry-failed",
    ),
    path(
        "publications/<str:publication_id>/events",
        views.PublicationEventsView.as_view(),
        name="publication-events",
    ),
]
