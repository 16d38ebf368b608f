"""``storage_options`` as pylance takes them, sorted into what obstore expects.

pylance passes its options to the Rust ``object_store`` crate, and obstore wraps the
same crate, so most keys (``aws_access_key_id``, ``endpoint``, ``region``,
``google_service_account``, ``account_name``, ...) go to the store unchanged and the
store refuses any it does not know.  HTTP client keys (``allow_http``, ``timeout``,
...) and pylance's retry keys are sorted out first.  Environment variables
(``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ...) are read by the store itself
when an option is not given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from lancelet.errors import ArgumentError, UnsupportedOptionError

CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "http1_only",
        "http2_keep_alive_interval",
        "http2_keep_alive_timeout",
        "http2_keep_alive_while_idle",
        "http2_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "timeout",
        "user_agent",
    }
)

# pylance's retry keys, and the field of obstore's retry config each sets.
RETRY_KEYS = {"client_max_retries": "max_retries", "client_retry_timeout": "retry_timeout"}

# Keys pylance understands that change how it talks to a store in ways lancelet does
# not reproduce: refused rather than silently dropped.
UNSUPPORTED_KEYS = frozenset(
    {
        "download_retry_count",
        "expires_at_millis",
        "aws_s3_express",
        "s3_express",
        "use_opendal",
        "lance_io_threads",
    }
)


@dataclass(frozen=True)
class StoreOptions:
    """One store's configuration, split the way obstore's constructor takes it."""

    config: dict[str, str] = field(default_factory=dict)
    client: dict[str, str] = field(default_factory=dict)
    retry: dict[str, Any] = field(default_factory=dict)

    def key(self) -> tuple[tuple[str, str], ...]:
        """A hashable form, so equal options share one store (and its connections)."""
        items = [("config." + k, v) for k, v in self.config.items()]
        items += [("client." + k, v) for k, v in self.client.items()]
        items += [("retry." + k, str(v)) for k, v in self.retry.items()]
        return tuple(sorted(items))


def split_options(options: Mapping[str, Any] | None, where: str) -> StoreOptions:
    """Sort ``options`` into store, client and retry settings; values become strings,
    as pylance's are."""
    if options is None:
        return StoreOptions()
    if not isinstance(options, Mapping):
        raise TypeError(f"{where}: storage_options must be a dict of str to str, not {options!r}")
    out = StoreOptions()
    for raw_key, value in options.items():
        if not isinstance(raw_key, str):
            raise TypeError(f"{where}: storage option names must be strings, not {raw_key!r}")
        key = raw_key.lower()
        if key in UNSUPPORTED_KEYS:
            raise UnsupportedOptionError(
                f"{where}: the storage option {raw_key!r} is not supported by lancelet"
            )
        text = _text(value, raw_key, where)
        if key in CLIENT_KEYS:
            out.client[key] = text
        elif key in RETRY_KEYS:
            out.retry[RETRY_KEYS[key]] = _retry_value(key, text, where)
        else:
            out.config[key] = text
    return out


def _text(value: Any, key: str, where: str) -> str:
    if value is None:
        # str(None) would set the option to "None"; pylance refuses it as well.
        raise TypeError(f"{where}: storage option {key!r} has no value (None)")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# The most a retry setting may say: obstore takes a retry count as a 64-bit integer,
# and ten years of retrying is already forever.
_MAX_RETRIES = 2**63 - 1
_MAX_RETRY_SECONDS = 10 * 365 * 24 * 3600


def _retry_value(key: str, text: str, where: str) -> Any:
    if key == "client_max_retries":
        count = text.strip()
        if not (count.isascii() and count.isdigit()) or int(count) > _MAX_RETRIES:
            raise ArgumentError(
                f"{where}: storage option {key!r}: {text!r} is not a count of retries"
            )
        return int(count)
    try:
        seconds = float(text.removesuffix("s"))
    except ValueError:
        raise ArgumentError(f"{where}: storage option {key!r}: {text!r} is not a number") from None
    if not 0 <= seconds <= _MAX_RETRY_SECONDS:  # also refuses nan
        raise ArgumentError(
            f"{where}: storage option {key!r}: {text!r} is not a number of seconds "
            f"between 0 and {_MAX_RETRY_SECONDS}"
        )
    return timedelta(seconds=seconds)
