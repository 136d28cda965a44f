"""Organizer-facing checks of a campaign before and during rating.

The protocol needs 5 demographically matched gallery faces per identity trial
(``../shared/seeds/002_68b18bfdbdb94491.txt``, section 4.2), and lineups whose make-up
and frequencies say nothing about the answer (:mod:`trials.design`, balanced exposure).
Videos the catalogue cannot give such lineups get no identity trials, and the organizer
is told why, here and on the organizer page.
"""

from __future__ import annotations

from evalsite.models import Campaign, SourceVideo

from .assignment import campaign_tasks, identity_exclusions, identity_pool, practice_pool, practice_trials
from .models import Task


def campaign_warnings(campaign: Campaign) -> list[str]:
    """Plain-language problems an organizer should fix or accept before rating.

    Returns
    -------
    list of str
        Empty when the campaign can be rated exactly as designed.
    """
    warnings = []
    pool = identity_pool(campaign)
    needed = campaign.foils_per_trial + 1
    if len(pool) < needed:
        warnings.append(f"only {len(pool)} identities have a gallery face; an identity trial shows {needed}")
    # Thin groups and identities above their balanced share get no identity trials
    # (trials.design.exposure_plan): one sentence per identity.
    warnings.extend(dict.fromkeys(identity_exclusions(campaign).values()))
    evaluated = SourceVideo.objects.filter(campaign=campaign, in_evaluated_subset=True)
    for video in evaluated.exclude(identity_id__in=list(pool)):
        warnings.append(f"video {video.name}: identity {video.identity.code} has no gallery face")
    if Task.ACTION in campaign_tasks(campaign):
        for video in evaluated.exclude(action__in=campaign.action_vocabulary):
            warnings.append(
                f"video {video.name}: action {video.action!r} is not in the action list, no action trials"
            )
    for submission in campaign.submissions.all():
        missing = submission.missing_source_videos().filter(in_evaluated_subset=True).count()
        if missing:
            warnings.append(f"submission {submission}: {missing} evaluated videos have no masked video")
    if not evaluated.exists():
        warnings.append("no video is in the evaluated subset")
    if practice_trials() and not practice_pool(campaign)[1]:
        n_practice = len(identity_pool(campaign, practice=True))
        warnings.append(
            f"no practice material: practice with feedback needs {needed} practice identities "
            f"with gallery faces (found {n_practice}; identities.csv column practice=true) and "
            "practice videos of them (videos.csv column role=practice), or the London practice faces "
            "(manage.py add_practice_faces --campaign ...). Until then practice trials show "
            "unevaluated videos of people with no evaluated video, else a face and an instruction "
            "(never a video of an evaluated person: feedback would reveal answers, and a person seen "
            "in practice could be struck off later lineups)"
        )
    if not campaign.consent_text.strip():
        warnings.append("the consent text is empty: raters would be asked to agree to a text they cannot see")
    return warnings
