"""Object storage for lesson 06 (:mod:`iolab.lessons.l06_object_storage.stores`): local stores, a slow link, FUSE
mounts and fsspec caches; :mod:`.store` puts them together (a store behind the link, its objects, the
bytes counted).

Every server, proxy and mount here is a context manager that leaves nothing behind.
"""
from __future__ import annotations

from ..service import PortTaken
from .endpoint import CredentialsError, Endpoint, from_env
from .servers import local_gcs, local_s3, which_s3_server
from .store import services_running

__all__ = ["CredentialsError", "Endpoint", "PortTaken", "from_env", "local_gcs", "local_s3", "services_running",
           "which_s3_server"]
