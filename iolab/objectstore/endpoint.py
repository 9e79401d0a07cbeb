"""Where an object store is and how to talk to it: one Endpoint for boto3, fsspec, s3cmd and FUSE.

An Endpoint never shows its secret: not in repr, not in argv (credentials go to files of mode 0600),
not in a recording. A real store is configured by the instructor with environment variables::

    IOLAB_S3_ENDPOINT=https://s3.us-east.cloud-object-storage.appdomain.cloud
    IOLAB_S3_ACCESS_KEY_ID=...   IOLAB_S3_SECRET_ACCESS_KEY=...   [IOLAB_S3_REGION=us-east-1]
    IOLAB_GCS_ENDPOINT=https://storage.googleapis.com   IOLAB_GCS_KEY_FILE=/path/key.json

or with an INI file named by ``IOLAB_OBJECTSTORE_CONFIG`` (sections ``[s3]`` and ``[gcs]``, the
same names in lower case without the prefix), which must not be readable by others.
"""
from __future__ import annotations

import configparser
import dataclasses
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..errors import IolabError

KINDS = ("s3", "gcs")


class CredentialsError(IolabError, PermissionError):
    """Missing, unsafe or refused credentials."""


def write_secret_file(path: str | os.PathLike[str], text: str) -> Path:
    """Write text to a new file created with mode 0600 (never readable by others, even briefly)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.exists():
        p.unlink()
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(p, 0o600)
    return p


@dataclass(frozen=True)
class Endpoint:
    """An S3-compatible or GCS endpoint (URL, credentials) as every client here needs it."""

    kind: str                                   # "s3" or "gcs"
    url: str                                    # e.g. http://127.0.0.1:40123
    access_key: str = field(default="", repr=False)
    secret_key: str = field(default="", repr=False)
    region: str = "us-east-1"
    server: str = ""                            # what serves it: "SeaweedFS 4.48 (local)", "toxiproxy -> ..."
    token_file: str = field(default="", repr=False)   # GCS service-account key, for a real store
    local: bool = True
    memory: bool = False                        # the store keeps its objects in memory (moto, fake-gcs-server)
    metrics_url: str = ""                       # the store's Prometheus counters (SeaweedFS with metrics=True)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind is one of {KINDS}, not {self.kind!r}")
        u = urlparse(self.url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"an endpoint URL looks like http://host:port, got {self.url!r}")

    # -- addresses -------------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return urlparse(self.url).hostname or ""

    @property
    def port(self) -> int:
        u = urlparse(self.url)
        return u.port or (443 if u.scheme == "https" else 80)

    @property
    def localhost_url(self) -> str:
        """The URL with 127.0.0.1 written as localhost (gcsfuse hangs on 127.0.0.1 here)."""
        u = urlparse(self.url)
        if u.hostname == "127.0.0.1":
            return f"{u.scheme}://localhost:{self.port}"
        return self.url.rstrip("/")

    def via(self, url: str, server: str) -> "Endpoint":
        """The same store reached through another address (a slow-link proxy)."""
        return dataclasses.replace(self, url=url, server=server)

    def describe(self) -> str:
        return f"{self.kind.upper()} endpoint {self.url} ({self.server or 'unknown server'})"

    # -- credential files (mode 0600) -------------------------------------------------------------
    def s3fs_passwd_file(self, directory: str | os.PathLike[str]) -> Path:
        """``KEY:SECRET`` for s3fs-fuse's ``passwd_file``."""
        self._need_s3_keys()
        return write_secret_file(Path(directory) / "s3fs.passwd", f"{self.access_key}:{self.secret_key}\n")

    def s3cmd_config(self, directory: str | os.PathLike[str]) -> Path:
        self._need_s3_keys()
        u = urlparse(self.url)
        hostport = f"{u.hostname}:{self.port}"
        text = "\n".join([
            "[default]", f"access_key = {self.access_key}", f"secret_key = {self.secret_key}",
            f"host_base = {hostport}", f"host_bucket = {hostport}", f"bucket_location = {self.region}",
            f"use_https = {'True' if u.scheme == 'https' else 'False'}", "signature_v2 = False",
            "check_ssl_certificate = True", "progress_meter = False", ""])
        return write_secret_file(Path(directory) / "s3cmd.cfg", text)

    def rclone_config(self, directory: str | os.PathLike[str], remote: str = "store") -> Path:
        if self.kind == "s3":
            self._need_s3_keys()
            lines = [f"[{remote}]", "type = s3", "provider = Other", f"access_key_id = {self.access_key}",
                     f"secret_access_key = {self.secret_key}", f"endpoint = {self.url}",
                     f"region = {self.region}", "force_path_style = true"]
        else:
            lines = [f"[{remote}]", "type = google cloud storage", f"endpoint = {self.url}"]
            lines += [f"service_account_file = {self.token_file}"] if self.token_file else ["anonymous = true"]
        return write_secret_file(Path(directory) / "rclone.conf", "\n".join(lines) + "\n")

    def _need_s3_keys(self) -> None:
        if self.kind != "s3":
            raise ValueError("this is a GCS endpoint; S3 credential files make no sense for it")
        if not self.access_key or not self.secret_key:
            raise CredentialsError(f"{self.describe()} has no access key / secret key")

    # -- Python clients ---------------------------------------------------------------------------
    def filesystem(self, **kwargs: Any):
        """An fsspec filesystem (s3fs.S3FileSystem or gcsfs.GCSFileSystem) for this endpoint."""
        if self.kind == "s3":
            import s3fs

            # region_name is left out on purpose: moto refuses mkdir with region_name="us-east-1"
            return s3fs.S3FileSystem(key=self.access_key, secret=self.secret_key, endpoint_url=self.url,
                                     skip_instance_cache=True, **kwargs)
        # without this every bucket access first waits 60 s for a gRPC call an emulator never answers
        os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
        import gcsfs

        token = self.token_file or "anon"
        return gcsfs.GCSFileSystem(endpoint_url=self.url, token=token, skip_instance_cache=True, **kwargs)

    def make_bucket(self, bucket: str) -> str:
        fs = self.filesystem()
        if not fs.exists(bucket):
            fs.mkdir(bucket)
        return bucket


# --- a real store, from the environment or a config file -------------------------------------------

def _config_section(kind: str) -> dict[str, str]:
    path = os.environ.get("IOLAB_OBJECTSTORE_CONFIG")
    if not path:
        return {}
    p = Path(path).expanduser()
    mode = p.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CredentialsError(f"{p} holds secrets but others may read it (mode {stat.filemode(mode)}); "
                               f"run: chmod 600 {p}")
    cp = configparser.ConfigParser()
    cp.read(p)
    return dict(cp[kind]) if cp.has_section(kind) else {}


def from_env(kind: str = "s3") -> Endpoint:
    """The instructor's real store, or CredentialsError saying which setting is missing."""
    if kind not in KINDS:
        raise ValueError(f"kind is one of {KINDS}")
    conf = _config_section(kind)
    pre = f"IOLAB_{kind.upper()}_"

    def get(name: str, default: str = "") -> str:
        return os.environ.get(pre + name.upper()) or conf.get(name, "") or default

    if kind == "s3":
        url = get("endpoint")
        key, secret = get("access_key_id"), get("secret_access_key")
        if not (url and key and secret):
            raise CredentialsError(
                f"no real S3 store configured: set {pre}ENDPOINT, {pre}ACCESS_KEY_ID and {pre}SECRET_ACCESS_KEY "
                "(or IOLAB_OBJECTSTORE_CONFIG); the lesson uses a local store otherwise")
        return Endpoint("s3", url, key, secret, region=get("region", "us-east-1"), server="configured store",
                        local=False)
    url = get("endpoint", "https://storage.googleapis.com")
    key_file = get("key_file")
    if not key_file:
        raise CredentialsError(f"no real GCS store configured: set {pre}KEY_FILE (a service-account key)")
    return Endpoint("gcs", url, token_file=key_file, server="configured store", local=False)
