"""Each kubeconfig mistake gets a sentence naming the file and what is wrong, before any client
library reads the file (where the same mistakes read "Expected key current-context" or
"argument of type 'NoneType' is not iterable")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.kubeconfig import check_kubeconfig


def kubeconfig(
    *,
    context: str = "ctx",
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    context_body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": user or {"token": "t"}}],
        "contexts": [{"name": "ctx", "context": context_body or {"cluster": "c", "user": "u"}}],
        "current-context": context,
    }


def write(tmp_path: Path, content: dict[str, Any] | str | bytes, name: str = "kc") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(yaml.safe_dump(content))
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(None, "{path}: the file does not exist", id="missing-file"),
        pytest.param("a: [\n", "{path}: line 2, column 1: not valid YAML: ", id="not-yaml"),
        pytest.param(b"\xff\xfe", "{path}: not UTF-8 text: byte 0xff", id="not-utf8"),
        pytest.param(
            "- a\n",
            "{path}: not a kubeconfig (expected a mapping with clusters, contexts and users)",
            id="a-list",
        ),
        pytest.param("{}\n", "{path}: no current-context is set", id="empty-mapping"),
        pytest.param(
            kubeconfig(context="other"),
            "{path}: current-context 'other' is not among the contexts (defined: ctx)",
            id="missing-context",
        ),
        pytest.param(
            kubeconfig(context_body={"user": "u"}),
            "{path}: context 'ctx': names no cluster",
            id="context-without-cluster",
        ),
        pytest.param(
            kubeconfig(context_body={"cluster": "gone", "user": "u"}),
            "{path}: context 'ctx': names cluster 'gone', which is not defined",
            id="missing-cluster",
        ),
        pytest.param(
            kubeconfig(cluster={"insecure-skip-tls-verify": True}),
            "{path}: cluster 'c': has no server",
            id="cluster-without-server",
        ),
        pytest.param(
            kubeconfig(context_body={"cluster": "c", "user": "nobody"}),
            "{path}: context 'ctx': names user 'nobody', which is not defined",
            id="missing-user",
        ),
        pytest.param(
            kubeconfig(cluster={"server": "https://x", "certificate-authority": "ca.crt"}),
            "{path}: cluster 'c': certificate-authority ca.crt does not exist",
            id="missing-ca-file",
        ),
        pytest.param(
            kubeconfig(user={"tokenFile": "/no/token"}),
            "{path}: user 'u': tokenFile /no/token does not exist",
            id="missing-token-file",
        ),
        pytest.param(
            {"current-context": "ctx", "contexts": {"ctx": {}}},
            "{path}: contexts: must be a list of entries that each have a name",
            id="contexts-not-a-list",
        ),
    ],
)
def test_mistakes_are_named(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "kc" if content is None else write(tmp_path, content)
    with pytest.raises(ConfigError) as info:
        check_kubeconfig(str(path), {})
    assert str(info.value).startswith(message.format(path=f"kubeconfig {path}"))
    assert "\n" not in str(info.value)


def test_a_usable_kubeconfig_passes(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    path = write(
        tmp_path,
        kubeconfig(cluster={"server": "https://x", "certificate-authority": "ca.crt"}),
    )
    check_kubeconfig(str(path), {})


def test_a_context_without_a_user_is_anonymous_and_passes(tmp_path: Path) -> None:
    check_kubeconfig(str(write(tmp_path, kubeconfig(context_body={"cluster": "c"}))), {})


def test_kubeconfig_list_merges_as_the_client_does(tmp_path: Path) -> None:
    clusters = write(tmp_path, {"clusters": kubeconfig()["clusters"]}, "clusters")
    rest = write(tmp_path, {**kubeconfig(), "clusters": []}, "rest")
    listed = f"{tmp_path / 'absent'}:{clusters}:{rest}"
    check_kubeconfig(None, {"KUBECONFIG": listed})


def test_no_file_of_the_list_exists(tmp_path: Path) -> None:
    listed = f"{tmp_path / 'a'}:{tmp_path / 'b'}"
    with pytest.raises(ConfigError) as info:
        check_kubeconfig(None, {"KUBECONFIG": listed})
    assert str(info.value) == (
        f"kubeconfig {tmp_path / 'a'}, {tmp_path / 'b'}: none of the files exists "
        "(give --kubeconfig, or set KUBECONFIG)"
    )


def test_in_a_pod_without_a_kubeconfig_nothing_is_checked() -> None:
    check_kubeconfig(None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
