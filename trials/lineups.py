"""The lineup blocks of a campaign as the catalogue gives them (:func:`trials.design.exposure_plan`).

Read by :mod:`trials.assignment` (memoised per step of a rater's request) and by
:mod:`trials.media` (the footage of attention-check probes, which media cannot import
assignment for: assignment imports media through its siblings).
"""

from __future__ import annotations

from evalsite.models import Campaign, GalleryImage, SourceVideo

from . import design


def identity_pool(campaign: Campaign, practice: bool = False) -> dict[int, dict]:
    """``{identity_pk: attributes}`` for identities with a gallery image, by code
    (:func:`trials.assignment.identity_pool`)."""
    # One row per identity, by code (unique in a campaign): the order the default ordering
    # of gallery images (campaign name, identity code, image id) gave, without joining the
    # campaign or a row per image.
    rows = (
        GalleryImage.objects.filter(identity__campaign=campaign, identity__practice=practice)
        .order_by("identity__code")
        .values_list("identity_id", "identity__attributes")
        .distinct()
    )
    return {pk: attrs or {} for pk, attrs in rows}


def evaluated_videos(campaign: Campaign) -> list[tuple[int, int, str, bool, bool, bool]]:
    """The campaign's videos in the evaluated subset, by name: ``(pk, identity_pk, identity
    code, identity is a practice one, video is practice material, video is the attacker's
    own)``."""
    return list(
        SourceVideo.objects.filter(campaign=campaign, in_evaluated_subset=True)
        .order_by("name", "pk")
        .values_list(
            "pk", "identity_id", "identity__code", "identity__practice", "practice", "attacker_train"
        )
    )


def identity_plans(
    campaign: Campaign, pool: dict | None = None, evaluated: list | None = None
) -> tuple[dict[int, design.IdentityPlan], list[tuple[int, int]]]:
    """Lineup blocks of the campaign's evaluated people (:func:`trials.design.exposure_plan`).

    Parameters
    ----------
    campaign : Campaign
    pool, evaluated : optional
        :func:`identity_pool` and :func:`evaluated_videos` of the campaign, when the caller
        has them (read here otherwise).

    Returns
    -------
    plans : dict
        ``{identity_pk: IdentityPlan}`` for identities with a gallery face and evaluated videos.
    videos : list of (source_video_pk, identity_pk)
        Those evaluated videos, by name (a plan keeps the first ``kept`` of its identity's).
    """
    pool = identity_pool(campaign) if pool is None else pool
    evaluated = evaluated_videos(campaign) if evaluated is None else evaluated
    rows = [
        (pk, identity, code)
        for pk, identity, code, practice_person, practice_video, _ in evaluated
        if identity in pool and not practice_video and not practice_person
    ]
    counts: dict[int, int] = {}
    codes = {}
    for _, identity, code in rows:
        counts[identity] = counts.get(identity, 0) + 1
        codes[identity] = code
    plans = design.exposure_plan(
        counts,
        pool,
        campaign.demographic_attributes,
        n_foils=campaign.foils_per_trial,
        target_absent_share=campaign.target_absent_share,
        labels=codes,
    )
    return plans, [(pk, identity) for pk, identity, _ in rows]


def identity_videos(plans: dict, videos: list[tuple[int, int]]) -> dict[int, int]:
    """``{source_video_pk: identity_pk}`` of the videos the plans give identity trials (the
    first ``kept`` of each identity's, in the order of ``videos``; :func:`identity_plans`)."""
    used: dict[int, int] = {}
    kept = {}
    for pk, identity in videos:
        used[identity] = used.get(identity, 0) + 1
        if used[identity] <= plans[identity].kept:
            kept[pk] = identity
    return kept


def probe_image_pk(image_pks) -> int | None:
    """The still an identity's attention-check probe is made of, among its gallery images'
    ids in ascending order: the second when there are two or more (lineups show the first,
    so no pixel of the lineup face is in the probe), else the only one; None without any."""
    image_pks = list(image_pks)
    return image_pks[1] if len(image_pks) > 1 else (image_pks[0] if image_pks else None)
