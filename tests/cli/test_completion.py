"""Shell completion generated from the parsers: the bash script run by a real bash, and kubectl's
plugin completion asked through a real kubectl, both answer from the command line as it is."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kopf_scheduler.cli import build_parser
from kopf_scheduler.kubectl.plugin import build_parser as build_plugin_parser
from tests.cli.support import environment, kopf_scheduler

BASH = shutil.which("bash")
KUBECTL = shutil.which("kubectl")
BIN = Path(sys.executable).parent


def bash_completions(script: str, words: list[str], directory: Path) -> list[str]:
    """What the script's function puts in COMPREPLY for ``words`` (the last one being typed)."""
    assert BASH is not None
    quoted = " ".join("'" + word.replace("'", "'\\''") + "'" for word in words)
    program = f"""
{script}
COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}
_{words[0].replace("-", "_")}
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(
        [BASH, "-c", program], capture_output=True, text=True, cwd=directory, check=True
    )
    return [line for line in done.stdout.splitlines() if line]


@pytest.fixture
def script(tmp_path: Path) -> str:
    outcome = kopf_scheduler("completion", "bash", env=environment(tmp_path))
    assert outcome.code == 0, outcome.stderr
    return outcome.stdout


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["kopf-scheduler", "si"], ["simulate"]),
        (["kopf-scheduler", "simulate", "-o", ""], ["table", "json", "yaml", "html"]),
        (["kopf-scheduler", "explain", "web", "--out"], ["--output"]),
        (["kopf-scheduler", "config", ""], ["validate", "schema", "-h", "--help"]),
        (["kopf-scheduler", "completion", "z"], ["zsh"]),
        (["kopf-scheduler", "simulate", "--config", "sc"], ["scenario.yaml"]),
        (["kopf-scheduler", "config", "validate", "sc"], ["scenario.yaml"]),
        (["kopf-scheduler", "run", "--log-level", "w"], ["warning"]),
    ],
)
def test_bash_completes_commands_choices_and_files(
    script: str, tmp_path: Path, words: list[str], expected: list[str]
) -> None:
    (tmp_path / "scenario.yaml").write_text("")
    assert bash_completions(script, words, tmp_path) == expected


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_every_command_of_the_parser_is_completed(script: str, tmp_path: Path) -> None:
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert commands is not None
    assert set(bash_completions(script, ["kopf-scheduler", ""], tmp_path)) >= set(commands)


def test_the_zsh_script_wraps_the_bash_function(tmp_path: Path) -> None:
    outcome = kopf_scheduler("completion", "zsh", env=environment(tmp_path))
    assert outcome.code == 0
    assert "autoload -U +X bashcompinit && bashcompinit" in outcome.stdout
    assert "complete -o filenames -F _kopf_scheduler kopf-scheduler" in outcome.stdout


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize(
    ("words", "expected", "directive"),
    [
        (["pe"], ["pending"], ":4"),
        (["pending", "-o", ""], ["table", "json", "yaml"], ":4"),
        (["whatif", "--se"], ["--seed"], ":4"),
        (["whatif", ""], ["-h", "--help", "--context", "--kubeconfig", "--config"], ":0"),
    ],
)
def test_kubectl_completes_the_plugin(
    tmp_path: Path, words: list[str], expected: list[str], directive: str
) -> None:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "__complete", "kopf-scheduler", *words],
        capture_output=True,
        text=True,
        env=environment(tmp_path, {"PATH": f"{BIN}:/usr/bin:/bin"}),
        check=True,
    )
    *found, last = done.stdout.splitlines()
    assert found[: len(expected)] == expected
    assert last == directive
    plugin_commands = next(a for a in build_plugin_parser()._actions if a.dest == "command")
    assert "pending" in (plugin_commands.choices or {})
