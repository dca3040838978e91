"""Checking a kubeconfig before the API client reads it, so each mistake gets a sentence.

The client library reports a missing file as "Expected key current-context" and a context that
names an undefined cluster as "argument of type 'NoneType' is not iterable". The check here
reads the same files the library will read, the same way (``$KUBECONFIG`` may list several;
missing ones are skipped; the first definition of a name wins, the last ``current-context``
wins), and names the file and what is wrong with it. In a pod with no kubeconfig given, the
service account is used and there is nothing here to check.

The check also answers what kubectl's commands need of the kubeconfig: the namespace of the
context in use (``--context``, else ``current-context``), their default namespace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kopf_scheduler.config.documents import DocumentError, decode_utf8, load_yaml
from kopf_scheduler.config.errors import ConfigError

DEFAULT_NAMESPACE = "default"
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
"""Where a pod reads its own namespace, kubectl's default namespace inside a pod."""

_FILE_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}
"""Fields that name a file, relative to the kubeconfig's directory."""


def kubeconfig_paths(explicit: str | None, environ: Mapping[str, str]) -> list[str] | None:
    """The files the client will read; ``None`` when it will use the pod's service account."""
    if explicit:
        return [explicit]
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    listed = environ.get("KUBECONFIG")
    if listed:
        return [os.path.expanduser(path) for path in listed.split(os.pathsep) if path]
    return [str(Path.home() / ".kube" / "config")]


def _read(path: str, hint: str) -> Mapping[str, Any]:
    source = f"kubeconfig {path}"
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError("", f"the file does not exist{hint}", source) from None
    except OSError as error:
        raise ConfigError("", f"cannot read the file: {error.strerror or error}", source) from None
    try:
        document = load_yaml(decode_utf8(data), strict=False)
    except DocumentError as error:
        raise ConfigError("", str(error), source) from None
    if not isinstance(document, Mapping):
        raise ConfigError(
            "", "not a kubeconfig (expected a mapping with clusters, contexts and users)", source
        )
    return document


def _named(entries: Any, section: str, source: str) -> list[Mapping[str, Any]]:
    if entries is None:
        return []
    if not isinstance(entries, list) or not all(
        isinstance(entry, Mapping) and isinstance(entry.get("name"), str) for entry in entries
    ):
        raise ConfigError(section, "must be a list of entries that each have a name", source)
    return entries


class _Merged:
    """The kubeconfig files as the client merges them, remembering where each entry came from."""

    def __init__(self, paths: list[str], hint: str) -> None:
        self.files: list[str] = []
        self.current_context = ""
        self.entries: dict[str, dict[str, tuple[Mapping[str, Any], str]]] = {
            "clusters": {},
            "contexts": {},
            "users": {},
        }
        for path in paths:
            if len(paths) > 1 and not Path(path).exists():
                continue
            document = _read(path, hint)
            self.files.append(path)
            for section, known in self.entries.items():
                for entry in _named(document.get(section), section, f"kubeconfig {path}"):
                    known.setdefault(entry["name"], (entry, path))
            if "current-context" in document:
                self.current_context = str(document.get("current-context") or "")

    def find(self, section: str, name: str) -> tuple[Mapping[str, Any], str] | None:
        return self.entries[section].get(name)


def _body(entry: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    body = entry.get(key)
    return body if isinstance(body, Mapping) else {}


def _check_files(section: str, name: str, body: Mapping[str, Any], path: str) -> None:
    base = Path(path).resolve().parent
    for key in _FILE_FIELDS[section]:
        value = body.get(key)
        if isinstance(value, str) and value and not (base / os.path.expanduser(value)).exists():
            singular = section[:-1]
            raise ConfigError(
                f"{singular} {name!r}", f"{key} {value} does not exist", f"kubeconfig {path}"
            )


def _service_account_namespace() -> str:
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


def check_kubeconfig(
    explicit: str | None,
    environ: Mapping[str, str] | None = None,
    *,
    context_name: str | None = None,
) -> str:
    """Raise :class:`ConfigError` naming the problem of the kubeconfig the client would use.

    ``context_name`` chooses a context instead of ``current-context``, as ``--context`` does.
    Returns the namespace of the context in use (``default`` when it names none; in a pod without
    a kubeconfig, the pod's own namespace).
    """
    paths = kubeconfig_paths(explicit, os.environ if environ is None else environ)
    if paths is None:
        return _service_account_namespace()
    hint = "" if explicit else " (give --kubeconfig, or set KUBECONFIG)"
    merged = _Merged(paths, hint)
    if not merged.files:
        raise ConfigError("", f"none of the files exists{hint}", f"kubeconfig {', '.join(paths)}")
    source = f"kubeconfig {', '.join(merged.files)}"
    chosen = context_name or merged.current_context
    if not chosen:
        raise ConfigError("", "no current-context is set", source)
    found = merged.find("contexts", chosen)
    if found is None:
        defined = ", ".join(sorted(merged.entries["contexts"])) or "none"
        what = "context" if context_name else "current-context"
        raise ConfigError(
            "", f"{what} {chosen!r} is not among the contexts (defined: {defined})", source
        )
    context = _body(found[0], "context")
    where = f"context {chosen!r}"
    cluster_name = context.get("cluster")
    if not isinstance(cluster_name, str) or not cluster_name:
        raise ConfigError(where, "names no cluster", source)
    cluster = merged.find("clusters", cluster_name)
    if cluster is None:
        raise ConfigError(where, f"names cluster {cluster_name!r}, which is not defined", source)
    cluster_body = _body(cluster[0], "cluster")
    server = cluster_body.get("server")
    if not isinstance(server, str) or not server:
        raise ConfigError(f"cluster {cluster_name!r}", "has no server", f"kubeconfig {cluster[1]}")
    _check_files("clusters", cluster_name, cluster_body, cluster[1])
    user_name = context.get("user")
    if isinstance(user_name, str) and user_name:
        user = merged.find("users", user_name)
        if user is None:
            raise ConfigError(where, f"names user {user_name!r}, which is not defined", source)
        _check_files("users", user_name, _body(user[0], "user"), user[1])
    namespace = context.get("namespace")
    return namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE
