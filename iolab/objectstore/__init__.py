"""Object storage for lesson 06: local stores, a slow link, FUSE mounts and fsspec caches.

Every server, proxy and mount here is a context manager that leaves nothing behind.
"""
from __future__ import annotations

from ._proc import PortTaken
from .endpoint import CredentialsError, Endpoint, from_env
from .servers import local_gcs, local_s3, which_s3_server

__all__ = ["CredentialsError", "Endpoint", "PortTaken", "from_env", "local_gcs", "local_s3", "which_s3_server"]
