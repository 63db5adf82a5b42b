"""Data controls over a workspace: forget an agent, purge old memory, export, check permissions.

Everything that deletes goes through :class:`~memorylab.memory._store.MemoryStore` (the only
module that writes or deletes memory files), under the agent's lock. Forgetting and purging
live in ``_remove``, export and :func:`load_export` in ``_export``; the permission checks are
:mod:`memorylab.memory._permissions` (on the memory floor, so loaders may call them), re-exported
here. See ``docs/privacy.md`` for what is stored, where, for how long, and how to remove it.
"""

from __future__ import annotations

from memorylab.memory._permissions import check_permissions, warn_permissions
from memorylab.privacy._export import EXPORT_VERSION, export_agent, export_document, load_export
from memorylab.privacy._remove import ForgetReport, PurgeItem, forget, purge

__all__ = [
    "EXPORT_VERSION",
    "ForgetReport",
    "PurgeItem",
    "check_permissions",
    "export_agent",
    "export_document",
    "forget",
    "load_export",
    "purge",
    "warn_permissions",
]
