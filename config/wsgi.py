import logging
import os

from django.core.wsgi import get_wsgi_application

from config.logging import RedactSecretsFilter

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

# gunicorn's access and error logs write request paths and headers outside Django's logging
# configuration; the same filter keeps secrets (invitation and password-reset tokens in paths)
# out of them, whichever command started gunicorn (the image, `make run`, a custom one).
for _name in ("gunicorn.access", "gunicorn.error"):
    logging.getLogger(_name).addFilter(RedactSecretsFilter())
