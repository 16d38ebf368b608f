"""The storage options of a Spark read or write: given explicitly, or taken from the
Spark session's Hadoop S3A settings.

Explicit options carry the prefix ``storage.`` followed by one of pylance's
``storage_options`` keys (``.option("storage.endpoint", "http://127.0.0.1:9000")``,
``storage.aws_access_key_id``, ``storage.region``, ``storage.allow_http``, ...);
:mod:`lancelet.io` refuses a key the store does not know.

For ``s3a://`` and ``s3://`` paths the session's S3A settings apply too, set the way
Spark users set them (``spark.hadoop.fs.s3a.endpoint``, or ``fs.s3a.endpoint`` on
the session's conf), per bucket with ``fs.s3a.bucket.<bucket>.<key>``:

======================================  ==============================================
``fs.s3a.endpoint``                     ``endpoint`` (``https://``, or ``http://``
                                        without SSL, when it names no scheme)
``fs.s3a.endpoint.region``              ``region``
``fs.s3a.access.key``                   ``aws_access_key_id``
``fs.s3a.secret.key``                   ``aws_secret_access_key``
``fs.s3a.session.token``                ``aws_session_token``
``fs.s3a.path.style.access``            ``virtual_hosted_style_request`` (negated)
``fs.s3a.connection.ssl.enabled=false`` ``allow_http=true`` (so does an ``http://``
                                        endpoint)
``fs.s3a.aws.credentials.provider``     ``skip_signature=true`` for the anonymous
                                        provider
======================================  ==============================================

Other S3A settings tune Hadoop's own S3 client (buffers, thread pools, committers) and
do not apply.  An explicit option wins over a session setting for the same key.

Python data sources run in Python processes that Spark starts, where no session is
active, so the settings travel with the source: :func:`lancelet.spark.register` (which
``lancelet.spark.session()`` and ``LanceTable.forPath`` call) registers the source
with the session's S3A settings of that moment.  ``LanceTable`` reads them when a
table is opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from lancelet.io.uri import parse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PREFIX = "storage."
_S3A = "fs.s3a."
_BUCKET = _S3A + "bucket."
_SPARK_HADOOP = "spark.hadoop."
_ANONYMOUS = "AnonymousAWSCredentialsProvider"

# S3A settings (after "fs.s3a.") whose value passes unchanged, by storage option.
_SAME = {
    "endpoint.region": "region",
    "access.key": "aws_access_key_id",
    "secret.key": "aws_secret_access_key",
    "session.token": "aws_session_token",
}


def is_storage_key(key: str) -> bool:
    return key.lower().startswith(PREFIX)


def explicit_options(options: Mapping[str, str]) -> dict[str, str]:
    """The ``storage.*`` options, without the prefix (keys in lower case, as Spark's
    option map has them)."""
    out: dict[str, str] = {}
    for key, value in options.items():
        if not is_storage_key(key):
            continue
        name = key[len(PREFIX) :].lower()
        if not name:
            raise ValueError(
                f"lance data source: option {key!r} names no storage option "
                "(storage.endpoint, storage.aws_access_key_id, ...)"
            )
        out[name] = value
    return out


def as_spark_options(storage: Mapping[str, str] | None) -> dict[str, str]:
    """Storage options as the ``lance`` source's ``storage.*`` options."""
    return {PREFIX + key: value for key, value in (storage or {}).items()}


def session_settings(spark: SparkSession) -> dict[str, str]:
    """The session's S3A settings, by their Hadoop names (``fs.s3a.*``): those set as
    ``spark.hadoop.fs.s3a.*`` (at startup or on the session), and those set on the
    session as ``fs.s3a.*``, which win."""
    conf = spark.conf.getAll
    found = {
        key[len(_SPARK_HADOOP) :]: value
        for key, value in conf.items()
        if key.startswith(_SPARK_HADOOP + _S3A)
    }
    found.update({key: value for key, value in conf.items() if key.startswith(_S3A)})
    return found


def s3a_options(settings: Mapping[str, str], uri: str) -> dict[str, str]:
    """The storage options S3A ``settings`` give the bucket ``uri`` lies in (none for
    a location outside S3)."""
    location = parse(uri)
    if location.backend_scheme != "s3" or not settings:
        return {}
    own = f"{_BUCKET}{location.bucket}."
    general = {
        key[len(_S3A) :]: value
        for key, value in settings.items()
        if key.startswith(_S3A) and not key.startswith(_BUCKET)
    }
    general.update(
        {key[len(own) :]: value for key, value in settings.items() if key.startswith(own)}
    )
    return _translated(general, uri)


def _translated(s3a: Mapping[str, str], where: str) -> dict[str, str]:
    out = {option: s3a[name].strip() for name, option in _SAME.items() if s3a.get(name, "").strip()}
    ssl = _flag(s3a, "connection.ssl.enabled", where)
    endpoint = s3a.get("endpoint", "").strip()
    if endpoint:
        if "://" not in endpoint:
            endpoint = ("http://" if ssl is False else "https://") + endpoint
        out["endpoint"] = endpoint
    if ssl is False or endpoint.lower().startswith("http://"):
        out["allow_http"] = "true"
    path_style = _flag(s3a, "path.style.access", where)
    if path_style is not None:
        out["virtual_hosted_style_request"] = "false" if path_style else "true"
    if _ANONYMOUS in s3a.get("aws.credentials.provider", ""):
        out["skip_signature"] = "true"
    return out


def _flag(s3a: Mapping[str, str], name: str, where: str) -> bool | None:
    raw = s3a.get(name)
    if raw is None:
        return None
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"{where}: the Spark setting fs.s3a.{name}={raw!r} is not true or false")
    return text == "true"


def storage_options(
    uri: str, options: Mapping[str, str], settings: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """What a read or write of ``uri`` configures its store with: the explicit
    ``storage.*`` ``options`` over what the S3A ``settings`` give; None when neither
    gives anything (the store keeps what the process configured before)."""
    merged = {**s3a_options(settings or {}, uri), **explicit_options(options)}
    return merged or None


def table_storage_options(
    spark: SparkSession, uri: str, explicit: Mapping[str, str] | None
) -> dict[str, str] | None:
    """``LanceTable``'s storage options: ``explicit`` (pylance's keys, no prefix) over
    the session's S3A settings, read now."""
    given: dict[str, str] = {}
    for key, value in (explicit or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"{uri}: storage option names must be strings, not {key!r}")
        given[key.lower()] = value
    merged = {**s3a_options(session_settings(spark), uri), **given}
    return merged or None
