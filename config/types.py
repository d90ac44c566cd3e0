"""Type aliases shared by every app. The lowest layer: imports nothing from Herald."""

from typing import TypeAlias
from uuid import UUID

# The primary key of a Herald model as a caller holds it: a UUID from a model instance, or its
# text form from a URL, a form or a JSON body. The ORM accepts both in lookups. (The few
# BigAutoField tables, audit entries, ledgers, attempts, are never looked up by a caller's id.)
ModelId: TypeAlias = UUID | str
