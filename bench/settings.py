"""Benchmark settings: the production settings module plus a bare Django view to compare with."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
