"""A run's progress and event log, derived from the rows the run lifecycle already writes.

No log is stored: the events come from the run row (``created_at``, ``started_at``,
``finished_at``, ``status``, ``error``, ``videos_done`` / ``videos_total``) and its per-video
result rows (``VideoScore``, ``AttackExtraction``; one per done video, in the order they
were stored). Per-video rows carry no timestamp, so "video N done" events have no time;
the attack's rows carry their extraction seconds. The failed video is named by the run's
error (the face and attack units prefix their errors with the source video's name) and
the planned videos left undone are listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from evalsite.models import MaskedVideo

from . import dispatch
from .lifecycle import RESUMED
from .run_models import RunBase, RunStatus


@dataclass(frozen=True)
class LogEvent:
    """One line of a run's log.

    Attributes
    ----------
    at : datetime or None
        When it happened (aware); None for per-video events (their rows have no time).
    event : str
        ``"queued"``, ``"started"``, ``"resumed"``, ``"video done"``, ``"videos done"``, ``"failed"``,
        ``"not done"`` or ``"finished"``.
    text : str
        The line shown, e.g. ``"video 2/3 done: bbaf2n"``.
    """

    at: datetime | None
    event: str
    text: str

    def as_dict(self) -> dict:
        return {
            "at": None if self.at is None else self.at.isoformat(),
            "event": self.event,
            "text": self.text,
        }


def _video_names(ids) -> dict[int, str]:
    rows = MaskedVideo.all_versions.filter(pk__in=list(ids)).values_list("pk", "source_video__name")
    return dict(rows)


def _done_detail(kind: str, row) -> str:
    if kind == "attack":
        return f" ({row.n_crops} face crops, {row.extraction_s:.1f} s)"
    if row.frames_tested is None:
        return ""
    return f" ({row.frames_tested} frames tested)"


def run_log(run: RunBase) -> list[LogEvent]:
    """The events of ``run`` in order: queued, started, each video done, then failed or finished.

    Returns
    -------
    list of LogEvent
        For a failed run, the ``failed`` event carries the stored error (e.g. ``"ValueError:
        source video 'bbaf2n': cannot decode frame 7"``) and a ``not done`` event lists the
        planned videos without a result.
    """
    kind = dispatch.kind_name(run)
    spec = dispatch.RUN_KINDS[kind].kind
    rows = list(spec.result_model.objects.filter(run=run).order_by("pk"))
    names = _video_names(run.planned_videos)
    total = run.videos_total
    events = [LogEvent(run.created_at, "queued", f"queued: {total} video{'s' if total != 1 else ''} planned")]
    if run.started_at is not None:
        events.append(LogEvent(run.started_at, "started", "started"))
    resumed = int((run.deliveries or {}).get(RESUMED, 0))
    if resumed:
        times = "once" if resumed == 1 else f"{resumed} times"
        events.append(
            LogEvent(
                None, "resumed", f"resumed {times}: the process running it had stopped (server restart?)"
            )
        )
    for n, row in enumerate(rows, start=1):
        name = names.get(row.masked_video_id, f"masked video {row.masked_video_id}")
        events.append(
            LogEvent(None, "video done", f"video {n}/{total} done: {name}{_done_detail(kind, row)}")
        )
    if spec.has_final_step and rows and len(rows) >= total and run.status == RunStatus.RUNNING:
        folds = getattr(run, "folds_total", 0)  # the attack's cross-video folds, where it has them
        step = f"cross-video folds {run.folds_done}/{folds} done" if folds else "the final step is running"
        events.append(LogEvent(None, "videos done", f"every video done; {step} (attack suite)"))
    if run.status == RunStatus.FAILED:
        events.append(LogEvent(run.finished_at, "failed", f"failed: {run.error or 'no reason stored'}"))
        done = {row.masked_video_id for row in rows}
        undone = [names.get(pk, f"masked video {pk}") for pk in run.planned_videos if pk not in done]
        if undone:
            events.append(LogEvent(None, "not done", f"not done: {', '.join(undone)}"))
    elif run.status == RunStatus.COMPLETED:
        took = ""
        if run.started_at is not None and run.finished_at is not None:
            took = f" in {(run.finished_at - run.started_at).total_seconds():.1f} s"
        events.append(
            LogEvent(run.finished_at, "finished", f"finished: {run.videos_done}/{total} videos{took}")
        )
    return events


@dataclass(frozen=True)
class Units:
    """Every unit of work of a run, done and planned (the progress bar).

    Attributes
    ----------
    done, total : int
        Units done and planned: one per planned video, one per planned cross-video fold
        (attack runs), one for the summary step (kinds with a final step, done when the run
        completed).
    text : str
        E.g. ``"3/3 videos, 1/7 folds, summary 0/1"`` (an attack planning no fold:
        ``"3/3 videos, summary 0/1"``; the face run: ``"2/3 videos"``).
    """

    done: int
    total: int
    text: str

    @property
    def percent(self) -> int:
        """``done`` as a whole percentage of ``total``, never 100 before every unit is done (0 for none planned)."""
        if not self.total:
            return 0
        percent = round(100 * self.done / self.total)
        return min(percent, 99) if self.done < self.total else percent


def units(run: RunBase) -> Units:
    """The units of ``run``: its videos, its cross-video folds and its summary step (``Units``)."""
    spec = dispatch.RUN_KINDS[dispatch.kind_name(run)].kind
    done, total = run.videos_done, run.videos_total
    parts = [f"{done}/{total} videos"]
    if spec.fold_model is not None and run.folds_total:
        done, total = done + run.folds_done, total + run.folds_total
        parts.append(f"{run.folds_done}/{run.folds_total} folds")
    if spec.has_final_step:
        summary = int(run.status == RunStatus.COMPLETED)
        done, total = done + summary, total + 1
        parts.append(f"summary {summary}/1")
    return Units(done, total, ", ".join(parts))


def percent_done(run: RunBase) -> int:
    """Every unit done (``units``: videos, folds, the summary) as a whole percentage; 100 only once all are."""
    return units(run).percent


def run_payload(run) -> dict:
    """The JSON of one run: kind, status, progress (videos done / total), configuration, error, times."""
    return {
        "id": run.pk,
        "kind": dispatch.kind_name(run),
        "status": run.status,
        "videos_done": run.videos_done,
        "videos_total": run.videos_total,
        "folds_done": getattr(run, "folds_done", None),
        "folds_total": getattr(run, "folds_total", None),
        "progress": run.progress,
        "config": run.config,
        "error": run.error,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


def progress_payload(run: RunBase) -> dict:
    """JSON of one run for the progress page: ``run_payload`` plus its ``units`` (``units_done``,
    ``units_total``, ``units_text``, ``percent``), ``active`` and ``log``."""
    work = units(run)
    return {
        **run_payload(run),
        "units_done": work.done,
        "units_total": work.total,
        "units_text": work.text,
        "percent": work.percent,
        "active": run.status in (RunStatus.PENDING, RunStatus.RUNNING),
        "log": [event.as_dict() for event in run_log(run)],
    }


def submission_runs(submission) -> list[RunBase]:
    """The submission's runs of every kind, newest first (as ``GET /api/submissions/<id>/runs/``)."""
    runs = [*submission.automated_runs.all(), *submission.attack_runs.all()]
    runs.sort(key=lambda run: (run.created_at, run.pk), reverse=True)
    return runs
