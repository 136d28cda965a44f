"""Teams belong to one campaign (``Team.campaign``; names unique per campaign).

Before, a team was global and shared by name across campaigns, so one organizer could
reach another campaign's team (its members, submissions and reports). Data step:

- a team whose submissions are all in one campaign gets that campaign;
- a team with submissions in several campaigns is split: the original row keeps the
  campaign of its earliest submission (lowest id), and every other campaign gets a new
  team of the same name with the same members, to which that campaign's submissions move;
- a team with no submission keeps ``campaign`` empty: no campaign can claim it, so only
  superusers see it (and can assign it a campaign or delete it).

Going back is allowed only while no two teams share a name (the old unique name).
"""

from django.db import migrations, models
import django.db.models.deletion


def assign_campaigns(apps, schema_editor):
    Team = apps.get_model("evalsite", "Team")
    Submission = apps.get_model("evalsite", "Submission")
    for team in Team.objects.order_by("pk"):
        campaign_ids = list(
            Submission.objects.filter(team=team).order_by("pk").values_list("campaign_id", flat=True)
        )
        ordered = list(dict.fromkeys(campaign_ids))  # first-submission order, no repeats
        if not ordered:
            continue
        team.campaign_id = ordered[0]
        team.save(update_fields=["campaign"])
        members = list(team.members.all())
        for campaign_id in ordered[1:]:
            copy = Team.objects.create(name=team.name, campaign_id=campaign_id)
            copy.members.set(members)
            Submission.objects.filter(team=team, campaign_id=campaign_id).update(team=copy)


def refuse_if_names_repeat(apps, schema_editor):
    Team = apps.get_model("evalsite", "Team")
    repeated = Team.objects.values("name").annotate(n=models.Count("pk")).filter(n__gt=1)
    if repeated.exists():
        names = ", ".join(sorted(repeated.values_list("name", flat=True)))
        raise RuntimeError(
            f"cannot go back to global team names: these names are in several campaigns: {names}"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("evalsite", "0008_sourcevideo_attacker_train"),
    ]

    operations = [
        migrations.AddField(
            model_name="team",
            name="campaign",
            field=models.ForeignKey(
                help_text="The campaign this team enters; the same name in another campaign is another team.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="teams",
                to="evalsite.campaign",
            ),
        ),
        migrations.AlterField(
            model_name="team",
            name="name",
            field=models.CharField(max_length=200, verbose_name="name"),
        ),
        migrations.RunPython(assign_campaigns, refuse_if_names_repeat),
        migrations.AddConstraint(
            model_name="team",
            constraint=models.UniqueConstraint(
                fields=("campaign", "name"), name="unique_team_name_per_campaign"
            ),
        ),
    ]
