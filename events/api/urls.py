from django.urls import path

from events.api import views

app_name = "events"

urlpatterns = [
    path("events", views.EventListView.as_view(), name="event-list"),
]
