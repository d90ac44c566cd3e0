# syntax=docker/dockerfile:1
#
# Herald container image.
#
#   docker build -t herald .
#   docker run --rm -p 8000:8000 -e SECRET_KEY=... -e DATABASE_URL=postgres://... herald
#
# Stage "builder" builds wheels of the project and of every dependency and installs them into
# the virtual environment /opt/venv. Stage "runtime" copies only that environment onto
# python:3.11-slim: no compiler, no source tree, no build tools. The process runs as the
# unprivileged user "herald". See docker-compose.yml for the full composition (web, worker,
# beat, PostgreSQL, Redis).

ARG PYTHON_IMAGE=python:3.11-slim

# --- builder -------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
RUN python -m venv /opt/venv

# The build context is filtered by .dockerignore (no .venv, .data, .git, tests, secrets).
COPY . .

RUN --mount=type=cache,target=/root/.cache/pip \
    python -m pip wheel --wheel-dir /wheels . \
 && /opt/venv/bin/python -m pip install --no-index --find-links /wheels herald \
 && /opt/venv/bin/python -m pip check

# --- runtime -------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

ARG HERALD_UID=10001

# Defaults; override any of them at run time. HERALD_ENVIRONMENT=production makes SECRET_KEY
# mandatory (the settings refuse to start without it) and turns on the HTTPS protections.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    HERALD_ENVIRONMENT=production \
    HERALD_DEPLOYMENT=self_hosted \
    HERALD_DATA_DIR=/data \
    HERALD_STATIC_ROOT=/app/static \
    WEB_CONCURRENCY=2 \
    HERALD_WEB_THREADS=4 \
    HERALD_WEB_TIMEOUT=30

RUN groupadd --system --gid "${HERALD_UID}" herald \
 && useradd --system --uid "${HERALD_UID}" --gid herald --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin herald

COPY --from=builder /opt/venv /opt/venv
COPY docker/gunicorn.conf.py docker/healthcheck.py /app/
WORKDIR /app

# Static files (admin, API docs assets) are collected once, at build time, into
# $HERALD_STATIC_ROOT (/app/static, read-only for the app user) and served by WhiteNoise.
# The SECRET_KEY below is a throwaway value that exists only for this step and is not kept in
# the image. The DATABASE_URL and REDIS_URL placeholders stop the settings from preparing the
# embedded SQLite/filesystem-broker defaults; collectstatic connects to neither.
# /data (HERALD_DATA_DIR) belongs to the app user; media and the beat schedule live below it.
RUN SECRET_KEY=collectstatic-build-only-not-a-secret \
    HERALD_ENVIRONMENT=local \
    DATABASE_URL=postgres://build@build.invalid:5432/build \
    REDIS_URL=redis://build.invalid:6379/0 \
    django-admin collectstatic --noinput \
 && mkdir -p /data/media /data/beat \
 && chown herald:herald /data /data/media /data/beat

# The source revision recorded with certification runs (readiness/subjects.py). The build
# context has no .git to read it from, so it is a build argument:
#   docker build --build-arg HERALD_SOURCE_REVISION="$(git rev-parse HEAD)" .
# (docker-compose.yml passes ${HERALD_SOURCE_REVISION}; `make image` passes the checkout's
# commit). The build refuses to run without it, so an image never records "unknown". Declared
# after the steps above so a new revision does not invalidate their cached layers.
ARG HERALD_SOURCE_REVISION=""
RUN test -n "${HERALD_SOURCE_REVISION}" \
 || { echo 'Build with --build-arg HERALD_SOURCE_REVISION="$(git rev-parse HEAD)" (or make image)' >&2; exit 1; }
ENV HERALD_SOURCE_REVISION=${HERALD_SOURCE_REVISION}
LABEL org.opencontainers.image.revision="${HERALD_SOURCE_REVISION}"

USER herald:herald

EXPOSE 8000

# Liveness only (spec: the container health check never uses the readiness probe, so a
# database outage cannot cause restart loops). No curl in the image: a stdlib script.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "/app/healthcheck.py", "http://127.0.0.1:8000/api/v1/health"]

# Web process. Workers/threads come from WEB_CONCURRENCY / HERALD_WEB_THREADS (gunicorn.conf.py).
# The same image runs the other roles with another command:
#   celery -A config worker      celery -A config beat      django-admin migrate --noinput
CMD ["gunicorn", "--config", "/app/gunicorn.conf.py", "--bind", "0.0.0.0:8000", "config.wsgi:application"]
