from django.urls import path

from voice.api import views

app_name = "voice"

urlpatterns = [
    path("voice-profiles", views.VoiceProfileListView.as_view(), name="voice-profile-list"),
    path(
        "voice-profiles/<str:voice_profile_id>",
        views.VoiceProfileDetailView.as_view(),
        name="voice-profile-detail",
    ),
    path(
        "voice-profiles/<str:voice_profile_id>/default",
        views.VoiceProfileDefaultView.as_view(),
        name="voice-profile-default",
    ),
    path(
        "voice-profile-assignments/<str:account_id>",
        views.VoiceProfileAssignmentView.as_view(),
        name="voice-profile-assignment",
    ),
]
