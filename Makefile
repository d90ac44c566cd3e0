# Two set-up commands on a fresh machine with only Python 3.11: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install lint fmt migrate bench bench-delivery bench-readiness bench-scale bench-migration-locks bench-uploads bench-video-burst image clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { echo "Python 3.11 is required"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

# Web server (gunicorn), Celery worker and beat on the embedded default; Ctrl-C stops all.
run: install
	$(BIN)/python scripts/run.py

test: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m mypy
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# Format and apply the safe lint fixes: what `make test` and the pre-commit hooks check.
fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install
	$(BIN)/python bench/api.py

bench-delivery: install
	$(BIN)/python bench/delivery.py

bench-readiness: install
	$(BIN)/python bench/readiness.py

bench-scale: install
	$(BIN)/python bench/scale.py

bench-migration-locks: install
	$(BIN)/python bench/migration_locks.py

# A 1 GiB tus upload through gunicorn and the probe of a one-minute 1080p video (bench/README.md).
bench-uploads: install
	$(BIN)/python bench/uploads.py

# 100 video posts of 20 MB to seven networks' stand-ins that process videos (bench/README.md).
bench-video-burst: install
	$(BIN)/python bench/video_burst.py

# The container image, with the checkout's commit as the source revision certification runs record.
image:
	docker build --build-arg HERALD_SOURCE_REVISION="$$(git rev-parse HEAD)" -t herald:local .

clean:
	rm -rf $(VENV) .data
