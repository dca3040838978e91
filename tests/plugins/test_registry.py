"""Out-of-tree plugins found through the entry-point group ``kopf_scheduler.plugins``.

Each test installs small distributions the way pip leaves them (a ``*.dist-info`` folder with
``METADATA`` and ``entry_points.txt`` beside the modules) in a folder put on ``sys.path``, and
reads a configuration as the scheduler does at start. What an admin must see for a bad package
is one line naming the entry point and its distribution, never a traceback.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_scheduler.cli import main
from kopf_scheduler.config.errors import ConfigError
from kopf_scheduler.config.loader import parse_config
from kopf_scheduler.config.profiles import build_profile_plugins
from kopf_scheduler.framework.handle import Handle

BASE = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

ZONED = """
from typing import ClassVar

from kopf_scheduler.framework.args import InvalidArgsError, ensure_mapping, reject_unknown
from kopf_scheduler.framework.status import SUCCESS


class Zoned:
    name: ClassVar[str] = "Zoned"

    def __init__(self, zone):
        self.zone = zone

    def score(self, state, pod, node_info):
        return (100 if node_info.node.labels.get("zone") == self.zone else 0), SUCCESS

    def score_extensions(self):
        return None


def new(args, handle):
    args = ensure_mapping(args)
    reject_unknown(args, {"zone"})
    zone = args.get("zone", "z1")
    if not isinstance(zone, str):
        raise InvalidArgsError("args.zone", f"must be a string, got {zone!r}")
    return Zoned(zone)
"""


class Site:
    """A folder on ``sys.path`` to install distributions into."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: set[str] = set()

    def install(
        self, dist: str, version: str, entry_points: dict[str, str], modules: dict[str, str]
    ) -> None:
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
        (info / "entry_points.txt").write_text(f"[kopf_scheduler.plugins]\n{lines}")
        for module, source in modules.items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source))
            self.modules.add(module)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    installed = Site(root)
    yield installed
    for module in installed.modules:
        sys.modules.pop(module, None)


def enabling(name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "schedulerName": "kopf-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": name, "weight": 2}]}},
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": name, "args": args}]
    return {**BASE, "profiles": [profile]}


def config_error(raw: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    assert "\n" not in str(caught.value)
    return caught.value


def test_an_installed_plugin_is_enabled_by_name_with_its_weight_and_args(site: Site) -> None:
    site.install("zoned-plugin", "1.2", {"Zoned": "oot_zoned:new"}, {"oot_zoned": ZONED})
    config = parse_config(enabling("Zoned", {"zone": "z2"}))
    plugins = build_profile_plugins(config.profiles[0], Handle())
    scores = {plugin.name: weight for plugin, weight in plugins.score}
    assert scores["Zoned"] == 2
    zoned = next(plugin for plugin in plugins.all if plugin.name == "Zoned")
    assert zoned.zone == "z2"  # type: ignore[attr-defined]


def test_its_args_are_validated_and_the_field_named(site: Site) -> None:
    site.install("zoned-plugin", "1.2", {"Zoned": "oot_zoned:new"}, {"oot_zoned": ZONED})
    error = config_error(enabling("Zoned", {"zone": 3}))
    assert error.field == "profiles[0].pluginConfig[0].args.zone"
    assert error.reason == "must be a string, got 3"
    error = config_error(enabling("Zoned", {"region": "r1"}))
    assert error.field == "profiles[0].pluginConfig[0].args.region"
    assert error.reason == "unknown field"


def test_a_name_of_an_in_tree_plugin_is_refused_even_when_not_enabled(site: Site) -> None:
    site.install("evil-plugins", "2.0", {"NodeResourcesFit": "oot_evil:new"}, {"oot_evil": ZONED})
    error = config_error(BASE)
    assert str(error) == (
        "entry point 'NodeResourcesFit' (oot_evil:new) of distribution evil-plugins 2.0 in "
        "group kopf_scheduler.plugins clashes with the in-tree plugin NodeResourcesFit; rename it"
    )


def test_one_name_from_two_distributions_is_refused(site: Site) -> None:
    site.install("zoned-plugin", "1.2", {"Zoned": "oot_zoned:new"}, {"oot_zoned": ZONED})
    site.install("other-zoned", "0.3", {"Zoned": "oot_other:new"}, {"oot_other": ZONED})
    message = str(config_error(BASE))
    assert "entry point 'Zoned'" in message
    assert "distribution zoned-plugin 1.2" in message
    assert "distribution other-zoned 0.3" in message


def test_an_entry_point_that_fails_to_load_is_one_line_when_enabled(site: Site) -> None:
    site.install(
        "broken-plugin", "1.0", {"Broken": "oot_broken:new"}, {"oot_broken": "import not_there\n"}
    )
    parse_config(BASE)  # installed but not enabled: nothing is imported
    assert "oot_broken" not in sys.modules
    error = config_error(enabling("Broken"))
    assert error.field == "profiles[0].plugins"
    assert error.reason == (
        "entry point 'Broken' (oot_broken:new) of distribution broken-plugin 1.0 cannot be "
        "loaded: ModuleNotFoundError: No module named 'not_there'"
    )


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        pytest.param(
            "new = 42\n",
            "entry point 'Odd' (oot_odd:new) of distribution odd-plugin 1.0 is int, not a "
            "factory new(args, handle)",
            id="not-callable",
        ),
        pytest.param(
            "def new(args, handle):\n    raise RuntimeError('no\\nway')\n",
            "entry point 'Odd' (oot_odd:new) of distribution odd-plugin 1.0 failed to create "
            "the plugin: RuntimeError: no way",
            id="factory-raises",
        ),
        pytest.param(
            "class P:\n    name = 'Other'\n\ndef new(args, handle):\n    return P()\n",
            "entry point 'Odd' (oot_odd:new) of distribution odd-plugin 1.0 made a plugin named "
            "'Other'; its name must be the entry point's, 'Odd'",
            id="wrong-name",
        ),
        pytest.param(
            "def new(args, handle):\n    return 1 / 0 if False else (\n",
            "entry point 'Odd' (oot_odd:new) of distribution odd-plugin 1.0 cannot be loaded: "
            "SyntaxError: ",
            id="syntax-error",
        ),
    ],
)
def test_a_broken_plugin_is_named_in_one_line(site: Site, source: str, reason: str) -> None:
    site.install("odd-plugin", "1.0", {"Odd": "oot_odd:new"}, {"oot_odd": source})
    error = config_error(enabling("Odd"))
    assert error.field == "profiles[0].plugins"
    assert error.reason.startswith(reason)
    assert len(error.reason) < len(reason) + 60  # the exception's own text, nothing more


def test_the_command_line_prints_one_line_and_no_traceback(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site.install(
        "broken-plugin", "1.0", {"Broken": "oot_broken:new"}, {"oot_broken": "import not_there\n"}
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(enabling("Broken")))
    capsys.readouterr()
    assert main(["simulate", "--config", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: {config}: profiles[0].plugins: entry point 'Broken' (oot_broken:new) of "
        "distribution broken-plugin 1.0 cannot be loaded: ModuleNotFoundError: No module named "
        "'not_there'\n"
    )


def test_an_unknown_name_says_where_plugins_come_from() -> None:
    error = config_error(enabling("Missing"))
    assert error.reason.startswith("unknown plugin 'Missing' (neither in-tree nor installed")
    assert "kopf_scheduler.plugins" in error.reason
