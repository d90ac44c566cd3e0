"""Publishing services (writes). Import the sub-module you need, e.g.
``from publishing.services import publications``."""
