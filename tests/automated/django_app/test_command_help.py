"""Every argument of every automated management command says what it is (``--help``)."""

import argparse
from pathlib import Path

import pytest
from django.core.management import load_command_class

COMMANDS = sorted(
    path.stem
    for path in (Path(__file__).parents[3] / "automated" / "django_app" / "management" / "commands").glob(
        "*.py"
    )
    if not path.stem.startswith("_")
)


def test_the_automated_commands_are_found():
    assert {"evaluate", "attack", "make_baseline"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_argument_has_a_help_text(name):
    command = load_command_class("automated.django_app", name)
    parser = command.create_parser("manage.py", name)
    # Django's own options (--verbosity, --settings, ...) have theirs; check the command's too.
    missing = [
        action.dest
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction) and not (action.help and action.help.strip())
    ]
    assert missing == [], f"{name}: arguments without help: {missing}"
    assert command.help.strip()
