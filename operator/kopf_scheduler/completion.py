"""Shell completion for bash and zsh, generated from the argparse parser of the command.

The parser is the one source of the subcommands, options and their choices, so the completion
cannot fall behind the command line: the script is built by walking the parser into a tree of
commands (:func:`command_tree`), and the same tree answers kubectl's plugin completion
(``kubectl_complete-kopf_scheduler``, see :func:`candidates`). An option with choices completes
to them, an option or argument that takes a path completes to files. zsh runs the bash function
through its ``bashcompinit`` layer, which reads ``COMPREPLY`` as bash does.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SHELLS = ("bash", "zsh")
FILES = "<files>"
"""The value kind of an option or argument that names a file."""


@dataclass
class Command:
    """One command of the tree: its subcommands, its options and the values they take."""

    subcommands: dict[str, Command] = field(default_factory=dict)
    options: list[str] = field(default_factory=list)
    values: dict[str, list[str]] = field(default_factory=dict)
    """Per option that takes a value: its choices, ``[FILES]``, or ``[]`` for free text."""
    positional_files: bool = False
    positional_choices: list[str] = field(default_factory=list)

    @property
    def words(self) -> list[str]:
        """What may come next that is not a file: subcommands, choices and options."""
        return [*self.subcommands, *self.positional_choices, *self.options]


def _value_kind(action: argparse.Action) -> list[str]:
    if action.choices is not None and not isinstance(action.choices, dict):
        return [str(choice) for choice in action.choices]
    if action.type is Path:
        return [FILES]
    return []


def command_tree(parser: argparse.ArgumentParser) -> Command:
    """The commands, options and value kinds of ``parser`` and its subparsers."""
    command = Command()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                command.subcommands[name] = command_tree(subparser)
        elif action.option_strings:
            command.options.extend(action.option_strings)
            if action.nargs != 0:
                for option in action.option_strings:
                    command.values[option] = _value_kind(action)
        elif _value_kind(action) == [FILES]:
            command.positional_files = True
        else:
            command.positional_choices.extend(_value_kind(action))
    return command


def candidates(
    tree: Command, words: Sequence[str], list_files: Callable[[str], list[str]]
) -> list[str]:
    """What completes the last of ``words`` (the words after the program's name)."""
    *before, current = words or [""]
    command = tree
    for word in before:
        command = command.subcommands.get(word, command)
    if before and before[-1] in command.values:
        kinds = command.values[before[-1]]
        if kinds == [FILES]:
            return list_files(current)
        return [kind for kind in kinds if kind.startswith(current)]
    found = [word for word in command.words if word.startswith(current)]
    if command.positional_files and not current.startswith("-"):
        found += list_files(current)
    return found


def _function_name(program: str) -> str:
    return "_" + re.sub(r"\W", "_", program)


def _quoted_words(words: Sequence[str]) -> str:
    return shlex.quote(" ".join(words))


def _paths(tree: Command, prefix: str = "") -> list[tuple[str, Command]]:
    found = [(prefix, tree)]
    for name, sub in tree.subcommands.items():
        found += _paths(sub, f"{prefix} {name}".strip())
    return found


def bash_script(parser: argparse.ArgumentParser) -> str:
    """A bash completion script for ``parser.prog`` (``source <(prog completion bash)``)."""
    program = parser.prog
    function = _function_name(program)
    commands = _paths(command_tree(parser))
    steps, values, words = [], [], []
    for path, command in commands:
        for name in command.subcommands:
            key = shlex.quote(f"{path}|{name}")
            steps.append(f"            {key}) command={shlex.quote(f'{path} {name}'.strip())} ;;")
        for option, kinds in command.values.items():
            key = shlex.quote(f"{path}|{option}")
            if kinds == [FILES]:
                reply = 'COMPREPLY=($(compgen -f -- "$cur"))'
            else:
                reply = f'COMPREPLY=($(compgen -W {_quoted_words(kinds)} -- "$cur"))'
            values.append(f"            {key}) {reply}; return ;;")
        files = ' COMPREPLY+=($(compgen -f -- "$cur"));' if command.positional_files else ""
        words.append(
            f"            {shlex.quote(path)}) "
            f'COMPREPLY=($(compgen -W {_quoted_words(command.words)} -- "$cur"));'
            f"{files} ;;"
        )
    return "\n".join(
        [
            f"# bash completion for {program}, generated from its command line parser.",
            f"{function}() {{",
            '    local cur="${COMP_WORDS[COMP_CWORD]}" command="" word i',
            "    for ((i = 1; i < COMP_CWORD; i++)); do",
            '        word="${COMP_WORDS[i]}"',
            '        case "$command|$word" in',
            *steps,
            "        esac",
            "    done",
            "    if ((COMP_CWORD > 1)); then",
            '        case "$command|${COMP_WORDS[COMP_CWORD-1]}" in',
            *values,
            "        esac",
            "    fi",
            '    case "$command" in',
            *words,
            "    esac",
            "}",
            f"complete -o filenames -F {function} {program}",
            "",
        ]
    )


def zsh_script(parser: argparse.ArgumentParser) -> str:
    """A zsh completion script for ``parser.prog``: the bash function under ``bashcompinit``."""
    return "\n".join(
        [
            f"# zsh completion for {parser.prog}, generated from its command line parser.",
            "autoload -U +X bashcompinit && bashcompinit",
            bash_script(parser),
        ]
    )


def add_completion_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    root: argparse.ArgumentParser,
) -> None:
    """Add ``completion bash|zsh``, which prints the script for ``root``'s program."""
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script: source <(%(prog)s bash)".replace(
            "%(prog)s", f"{root.prog} completion"
        ),
    )
    completion.add_argument("shell", choices=SHELLS)

    def print_script(args: argparse.Namespace) -> int:
        script = bash_script(root) if args.shell == "bash" else zsh_script(root)
        print(script, end="")
        return 0

    completion.set_defaults(handler=print_script)
