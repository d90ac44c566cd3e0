from django.urls import path

from readiness.api import views

app_name = "readiness"

urlpatterns = [
    path("provider-readiness", views.ProviderReadinessView.as_view(), name="provider-readiness"),
    path(
        "admin/provider-readiness/approval-reviews",
        views.ApprovalReviewAppendView.as_view(),
        name="approval-reviews",
    ),
    path(
        "admin/provider-readiness/runtime-controls",
        views.RuntimeControlAppendView.as_view(),
        name="runtime-controls",
    ),
    path(
        "admin/provider-readiness/certifications",
        views.CertificationAppendView.as_view(),
        name="certifications",
    ),
]
