"""Accounts of team members (who log in at /team/): created or reset with a random password.

Used by ``manage.py add_team_member`` and the demo. A member account is a plain account
(no staff flag, no permissions): the team pages are all it opens (``evalsite/team_views.py``).
"""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.db import transaction

from .models import Team


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
