"""Organizer accounts: staff users who see and run only the campaigns they organize.

What an organizer may reach is decided by :mod:`evalsite.scoping` (rows of their campaigns
only); what they may do there by Django permissions: every permission of the platform's
own apps (:data:`ORGANIZER_APPS`: catalogue, automated runs, human evaluation, fairness),
none on accounts, groups or the site (they cannot make users, staff or superusers). A bare
staff account with no permission sees an empty admin.
"""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import transaction

from .models import Campaign

#: App labels whose permissions an organizer holds (the organizer pages, the admin, the API).
ORGANIZER_APPS = ("evalsite", "automated", "trials", "fairness")


def organizer_permissions():
    """Every permission (view, add, change, delete) of the models of :data:`ORGANIZER_APPS`."""
    return Permission.objects.filter(content_type__app_label__in=ORGANIZER_APPS)


def add_organizer(
    campaign: Campaign, username: str, *, new_password: bool = False
) -> tuple[object, str | None]:
    """Make ``username`` a staff organizer of ``campaign``, creating the account if new.

    The account becomes staff with :func:`organizer_permissions` (added to any it has)
    and is added to ``campaign.organizers``; other campaigns stay out of its reach. A
    superuser is only added to the organizers (it sees everything anyway).

    Parameters
    ----------
    campaign : Campaign
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
        If ``username`` is empty, or names a team member's or a rater's account (a
        participant must not become staff).
    """
    username = username.strip()
    if not username:
        raise ValueError("the username must not be empty")
    users = get_user_model().objects
    with transaction.atomic():
        user = users.filter(username=username).first()
        if user is not None and not user.is_superuser:
            if user.teams.exists():
                raise ValueError(
                    f"{username!r} is a team member's account: give the organizer a separate account"
                )
            raters = getattr(user, "rater_profiles", None)  # trials.Rater.user, when the app is installed
            if raters is not None and raters.exists():
                raise ValueError(f"{username!r} is a rater's account: give the organizer a separate account")
        password = secrets.token_urlsafe(12) if user is None or new_password else None
        if user is None:
            user = users.create_user(username, password=password)
        elif password is not None:
            user.set_password(password)
        if not user.is_superuser:
            user.is_staff, user.is_active = True, True
        user.save()
        if not user.is_superuser:
            user.user_permissions.add(*organizer_permissions())
        campaign.organizers.add(user)
    return user, password
