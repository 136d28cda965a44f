"""Accounts of team members (who log in at /team/) and what they may see.

Accounts are created or reset with a random password. The access rule of the team pages
is here too, in one place (:func:`own_submissions`, :func:`own_uploads`,
:func:`leaderboard_campaigns`, :func:`team_login_required`): rows of the user's teams only,
used by the team pages (``evalsite/portal/team_views.py``) and the apps' team-facing views.

Used by ``manage.py add_team_member``, the team admin and the demo. A member account is a
plain account (no staff flag, no permissions): the team pages are all it opens
(``evalsite/portal/team_views.py``). An organizer chooses members only among
:func:`member_choices`, so no account of another campaign's team is ever listed to them.
"""

from __future__ import annotations

import secrets

from functools import wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.urls import reverse_lazy

from .models import Campaign, LeaderboardVisibility, Submission, SubmissionUpload, Team
from .scoping import visible_campaigns


def add_team_member(team: Team, username: str, *, new_password: bool = False) -> tuple[object, str | None]:
    """Make ``username`` a member of ``team``, creating the account if it does not exist.

    Parameters
    ----------
    team : Team
    username : str
        Login name (surrounding spaces removed).
    new_password : bool, default=False
        Give an existing account a new random password (a new account always gets one).

    Returns
    -------
    (User, str or None)
        The account and its new password (None when an existing account kept its own).

    Raises
    ------
    ValueError
        If ``username`` is empty, or names a staff or superuser account (an organizer's
        account must not also be a team's: a team member sees only the team pages).
    """
    username = username.strip()
    if not username:
        raise ValueError("the username must not be empty")
    users = get_user_model().objects
    with transaction.atomic():
        user = users.filter(username=username).first()
        if user is not None and (user.is_staff or user.is_superuser):
            raise ValueError(
                f"{username!r} is a staff account (an organizer): give the team a separate, non-staff account"
            )
        password = secrets.token_urlsafe(12) if user is None or new_password else None
        if user is None:
            user = users.create_user(username, password=password)
        elif password is not None:
            user.set_password(password)
            user.save(update_fields=["password"])
        team.members.add(user)
    return user, password


def member_choices(user):
    """Accounts ``user`` may pick as members of a team in the admin.

    Plain accounts (no staff or superuser flag) only; for an organizer, only those
    already members of a team of one of their campaigns (a new account is created with
    :func:`add_team_member`: ``manage.py add_team_member`` or the team admin's "new
    members" field). A superuser may pick any plain account.
    """
    plain = get_user_model().objects.filter(is_staff=False, is_superuser=False)
    if user is not None and user.is_active and user.is_superuser:
        return plain
    return plain.filter(teams__campaign__in=visible_campaigns(user)).distinct()


def create_member_account(team: Team, username: str) -> tuple[object, str]:
    """Create a new account ``username`` as a member of ``team``; return it and its password.

    Unlike :func:`add_team_member` this never adds an existing account (the admin offers
    it to organizers, who must not reach accounts of other campaigns by name).

    Raises
    ------
    ValueError
        If ``username`` is empty or an account of that name exists.
    """
    username = username.strip()
    if get_user_model().objects.filter(username=username).exists():
        raise ValueError(f"the username {username!r} is taken: choose another one")
    user, password = add_team_member(team, username)
    return user, password


LOGIN_URL = reverse_lazy("team:login")


def team_login_required(view):
    """``login_required`` with the team login page."""
    return wraps(view)(login_required(view, login_url=LOGIN_URL))


# --- the access rule ------------------------------------------------------------------


def own_teams(user) -> QuerySet[Team]:
    """Teams ``user`` is a member of, in campaigns (none for an anonymous, inactive or staff user).

    A team belongs to one campaign (``Team.campaign``), so a member's teams are exactly
    the teams an organizer put them into, never a same-named team of another campaign.
    A team of no campaign (left from before teams were per campaign) opens nothing.
    Team pages are for plain accounts only (as ``evalsite.team_accounts`` creates them):
    an organizer's account among the members would otherwise mix the two roles.
    """
    if user is None or not user.is_authenticated or not user.is_active or user.is_staff or user.is_superuser:
        return Team.objects.none()
    return Team.objects.filter(members=user, campaign__isnull=False)


def own_submissions(user) -> QuerySet[Submission]:
    """Submissions of ``user``'s teams, in every campaign they entered."""
    # campaign = team's campaign always holds (Submission.save); checked again as a second lock.
    submissions = Submission.objects.filter(team__in=own_teams(user), campaign=F("team__campaign"))
    return submissions.select_related("team", "campaign")


def own_uploads(user) -> QuerySet[SubmissionUpload]:
    """Uploads to submissions of ``user``'s teams (whoever uploaded them)."""
    return SubmissionUpload.objects.filter(submission__in=own_submissions(user)).select_related(
        "submission__team", "submission__campaign"
    )


def leaderboard_campaigns(user) -> QuerySet[Campaign]:
    """Campaigns whose leaderboard ``user`` may see: published, and entered by one of their teams."""
    return Campaign.objects.filter(
        ~Q(leaderboard_visibility=LeaderboardVisibility.HIDDEN),
        pk__in=own_submissions(user).values("campaign"),
    )
