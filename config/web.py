"""Server-rendered documentation pages: the problem types (``/docs/problems/``).

The browser session's pages (sign-in, sign-out, developer settings) belong to the app that owns
users and tokens: ``workspaces.web_session``.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from config.problem_catalogue import catalogue


def problem_type(request: HttpRequest, code: str) -> HttpResponse:
    """Human documentation of one problem ``type`` URI (config.problem_catalogue)."""
    problem = catalogue().get(code)
    if problem is None:
        raise Http404
    return render(request, "herald/problem_type.html", {"code": code, "problem": problem})


def problem_index(request: HttpRequest) -> HttpResponse:
    """Every problem type this instance can answer with."""
    return render(request, "herald/problem_index.html", {"problems": list(catalogue().values())})
