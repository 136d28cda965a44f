"""What the ``evaluate`` and ``attack`` commands share: start a run, print its progress, wait for it.

Both start the run through ``dispatch.start_run`` (the path of the admin and the API) and,
unless ``--no-wait``, follow it with ``dispatch.wait``; only their options and the summary
they print differ.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from evalsite.models import Submission

from . import dispatch
from .run_models import RunBase

#: ``help`` of the ``submission_id`` argument and of ``--no-wait``, the same in both commands.
SUBMISSION_ID_HELP = (
    "id of the submission (python manage.py list_submissions, or the admin's submission list)"
)
NO_WAIT_HELP = (
    "with a broker: queue the run and return at once (follow it on the organizer page, in the admin or "
    "GET /api/submissions/<id>/runs/); without one the run always finishes first"
)


def add_common_arguments(parser) -> None:
    """The ``submission_id`` argument and ``--no-wait``."""
    parser.add_argument("submission_id", type=int, help=SUBMISSION_ID_HELP)
    parser.add_argument("--no-wait", action="store_true", help=NO_WAIT_HELP)


def start_and_follow(
    command: BaseCommand, kind: str, submission_id: int, *, no_wait: bool, **options
) -> RunBase | None:
    """Start a ``kind`` run of submission ``submission_id``, print its progress and wait for it.

    Prints ``"<kind> run <id> of <submission>: <status> (<done>/<total> videos)"``, then
    each new progress line (``dispatch.wait``).

    Returns
    -------
    RunBase or None
        The completed run; None when not waited for (``no_wait``) or still running when the
        wait ended.

    Raises
    ------
    CommandError
        No such submission; the options or the submission were refused (``ValueError`` of
        ``dispatch.start_run``, no run created); the run failed (with its stored error).
    """
    try:
        submission = Submission.objects.get(pk=submission_id)
    except Submission.DoesNotExist:
        raise CommandError(f"no submission with id {submission_id}") from None
    try:
        run = dispatch.start_run(kind, submission, **options)
    except ValueError as error:
        raise CommandError(str(error)) from error
    name = "run" if kind == "face" else f"{kind} run"
    command.stdout.write(f"{name} {run.pk} of {submission}: {run.status} ({run.progress})")
    if no_wait:
        return None
    run = dispatch.wait(run, lambda line: command.stdout.write(f"  {line}"))
    if run.status == run.Status.FAILED:
        raise CommandError(f"{name} {run.pk} failed: {run.error}")
    return run if run.status == run.Status.COMPLETED else None
