"""``import_dataset --organizer USER`` (and the admin) set who organizes a campaign: that
user sees it in the admin, on the organizer pages and in the API; other staff do not."""

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from evalsite.portal.demo import ORGANIZER_USERNAME, ensure_organizer
from evalsite.models import Campaign


def _staff(name: str) -> User:
    user = User.objects.create_user(name, password="pw-123456", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="evalsite"))
    return user


def _sees(user: User, campaign: Campaign) -> dict[str, bool]:
    client = Client()
    client.force_login(user)
    changelist = client.get(reverse("admin:evalsite_campaign_changelist")).content.decode()
    return {
        "admin list": campaign.name in changelist,
        "admin page": client.get(reverse("admin:evalsite_campaign_change", args=[campaign.pk])).status_code
        == 200,
        "organizer page": client.get(reverse("trials:organizer_campaign", args=[campaign.pk])).status_code
        == 200,
        "api": client.get(f"/api/campaigns/{campaign.pk}/").status_code == 200,
    }


def test_import_with_organizer_makes_the_campaign_visible_to_that_user_only(
    db, media_root, tiny_dataset, capsys
):
    # The README's login: make demo's `organizer` (here made the same way, with its permissions).
    Campaign.objects.create(name="Demo stand-in", slug="demo-stand-in")
    ensure_organizer(Campaign.objects.get(slug="demo-stand-in"))
    organizer = User.objects.get(username=ORGANIZER_USERNAME)
    other = _staff("other-organizer")
    call_command(
        "import_dataset",
        str(tiny_dataset),
        "--campaign",
        "Imported",
        "--organizer",
        "organizer",
        "--no-web-copies",
    )
    campaign = Campaign.objects.get(name="Imported")
    assert list(campaign.organizers.all()) == [organizer]
    assert _sees(organizer, campaign) == dict.fromkeys(
        ["admin list", "admin page", "organizer page", "api"], True
    )
    assert _sees(other, campaign) == dict.fromkeys(
        ["admin list", "admin page", "organizer page", "api"], False
    )
    boss = User.objects.create_superuser("boss", "boss@example.org", "pw-123456")
    assert all(_sees(boss, campaign).values())
    assert "only superusers see this campaign" not in capsys.readouterr().out


def test_several_organizers_and_the_hint_without_one(db, media_root, tiny_dataset, capsys):
    first, second = _staff("first"), _staff("second")
    call_command(
        "import_dataset",
        str(tiny_dataset),
        "--campaign",
        "Two",
        "--organizer",
        "first",
        "--organizer",
        "second",
        "--no-web-copies",
    )
    assert set(Campaign.objects.get(name="Two").organizers.all()) == {first, second}
    call_command("import_dataset", str(tiny_dataset), "--campaign", "Nobody", "--no-web-copies")
    assert "only superusers see this campaign" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("username", "message"),
    [
        ("ghost", "organizer 'ghost': no such user"),
        ("rater-account", "organizer 'rater-account' is not an active staff user"),
    ],
)
def test_unknown_or_non_staff_organizer_is_refused_and_nothing_is_imported(
    db, media_root, tiny_dataset, username, message
):
    User.objects.create_user("rater-account", password="pw-123456")
    with pytest.raises(CommandError, match=message):
        call_command(
            "import_dataset",
            str(tiny_dataset),
            "--campaign",
            "Refused",
            "--organizer",
            username,
            "--no-web-copies",
        )
    assert not Campaign.objects.filter(name="Refused").exists()


def test_a_campaign_added_in_the_admin_is_organized_by_its_creator(client, db):
    creator = _staff("creator")
    client.force_login(creator)
    page = client.post(
        reverse("admin:evalsite_campaign_add"),
        {
            "name": "Made in the admin",
            "slug": "made-in-the-admin",
            "action_vocabulary": "[]",
            "raters_per_video": 10,
            "foils_per_trial": 4,
            "demographic_attributes": '["gender"]',
            "target_absent_share": 0.2,
            "attention_check_rate": 0.1,
            "leaderboard_visibility": "hidden",
            # prefilled by the add form from the fields' defaults, as a browser sends them
            "screen_out_code": "screen-out-code-1",
            "bonus_per_correct_check": "0.00",
        },
        follow=True,
    )
    assert page.status_code == 200
    errors = (
        page.context.get("adminform").form.errors if page.context and page.context.get("adminform") else {}
    )
    assert not errors, errors
    campaign = Campaign.objects.get(slug="made-in-the-admin")
    assert list(campaign.organizers.all()) == [creator] and not campaign.rating_open
    assert _sees(creator, campaign)["admin page"] and not _sees(_staff("bystander"), campaign)["admin page"]
