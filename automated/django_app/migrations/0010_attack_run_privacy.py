from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("automated", "0009_run_owner"),
    ]

    operations = [
        migrations.AddField(
            model_name="attackrun",
            name="privacy",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The declared attacker chosen on development identities (attack.declared), verification by demographic group (EER, linkability), and per masked video temporal identity consistency and flicker with the linking attacker across recordings (automated.temporal).",
                verbose_name="declared attacker, linkability by group, identity over time",
            ),
        ),
    ]
