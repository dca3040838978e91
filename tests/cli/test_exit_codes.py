"""The exit codes README documents, one test per class of failure, through the real command.

0 success, 1 a run-time failure (the API server refused a request or could not be reached), 2 bad
input, 141 the reader of the output went away. A closed pipe used to end in a BrokenPipeError
traceback once the output was larger than the pipe's buffer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kopf_scheduler import exit_codes
from tests.cli.support import (
    assert_one_line_error,
    environment,
    kopf_scheduler,
    refusing_api_server,
    write_kubeconfig,
)
from tests.sim.support import node, pod

PODS = 300


def big_scenario(path: Path) -> Path:
    """A few nodes and a few hundred pods: the explained report is far larger than a pipe holds."""
    documents = [node(f"node-{index}") for index in range(3)]
    documents += [pod(f"web-{index}", cpu="100m") for index in range(PODS)]
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_bad_input_is_2(tmp_path: Path) -> None:
    absent = tmp_path / "absent.yaml"
    outcome = kopf_scheduler("simulate", str(absent), env=environment(tmp_path))
    assert outcome.code == exit_codes.USAGE == 2
    assert "Traceback" not in outcome.stderr


def test_a_refused_request_is_1(tmp_path: Path) -> None:
    with refusing_api_server() as url:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url)
        outcome = kopf_scheduler(
            "explain", "team/web", "--kubeconfig", str(kubeconfig), env=environment(tmp_path)
        )
    assert_one_line_error(
        outcome,
        exit_codes.RUNTIME,
        "a permission is missing (403 Forbidden): "
        'forbidden: cannot get path "/api/v1/namespaces/team/pods/web"',
    )


def test_an_unreachable_api_server_is_1(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")
    outcome = kopf_scheduler(
        "explain", "team/web", "--kubeconfig", str(kubeconfig), env=environment(tmp_path)
    )
    assert outcome.code == exit_codes.RUNTIME == 1
    [line] = outcome.error_lines
    assert line.startswith("error: cannot connect to the API server: ")


def closing_reader(tmp_path: Path, arguments: list[str], read: int) -> tuple[int, str]:
    """Run the command with its output read ``read`` bytes far, then the pipe closed (as
    ``| head -c N`` does); its exit code and stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "kopf_scheduler", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(tmp_path),
    )
    assert process.stdout is not None and process.stderr is not None
    assert len(process.stdout.read(read)) == read
    process.stdout.close()
    stderr = process.stderr.read().decode()
    return process.wait(timeout=120), stderr


def test_a_closed_pipe_after_ten_bytes_of_a_large_report_is_141(tmp_path: Path) -> None:
    scenario = big_scenario(tmp_path / "scenario.yaml")
    code, stderr = closing_reader(
        tmp_path, ["simulate", str(scenario), "--explain", "-o", "json"], 10
    )
    assert (code, stderr) == (exit_codes.CLOSED_PIPE, "")
    assert code == 141


@pytest.mark.parametrize("output", ["table", "json", "yaml", "html"])
def test_a_pipe_closed_before_a_small_report_is_141(tmp_path: Path, output: str) -> None:
    code, stderr = closing_reader(tmp_path, ["simulate", "-o", output], 0)
    assert (code, stderr) == (exit_codes.CLOSED_PIPE, "")


@pytest.mark.parametrize(
    ("entry", "arguments"),
    [
        ("kopf_scheduler.cli", ["simulate", "-o", "json"]),
        ("kopf_scheduler.kubectl.plugin", ["version", "-o", "json"]),
    ],
)
def test_the_console_commands_end_without_tearing_the_heap_down(
    tmp_path: Path, entry: str, arguments: list[str]
) -> None:
    """Once the output is flushed the process ends: no exit handler runs (nor the interpreter's
    freeing of every object it holds), the whole output arrives, and the code is the command's."""
    program = (
        "import atexit, sys\n"
        "atexit.register(print, 'torn down', file=sys.stderr)\n"
        f"sys.argv[1:] = {arguments!r}\n"
        f"from {entry} import entry\n"
        "entry()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env=environment(tmp_path),
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (exit_codes.SUCCESS, "")
    assert json.loads(done.stdout)
