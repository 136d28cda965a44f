from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("trials", "0012_session_network_hash_ipv4"),
    ]

    operations = [
        migrations.AddField(
            model_name="gallerycrop",
            name="catch_source_pk",
            field=models.PositiveIntegerField(
                blank=True, help_text="Source video whose footage the probe is (empty: no clip, a composite).", null=True
            ),
        ),
        migrations.AddField(
            model_name="gallerycrop",
            name="catch_masked_pk",
            field=models.PositiveIntegerField(
                blank=True, help_text="Masked video whose footage the probe is (empty: the clear clip's).", null=True
            ),
        ),
        migrations.AddField(
            model_name="gallerycrop",
            name="catch_frames",
            field=models.PositiveIntegerField(blank=True, help_text="Frames of the probe as encoded.", null=True),
        ),
        migrations.AddField(
            model_name="gallerycrop",
            name="catch_fps",
            field=models.FloatField(blank=True, help_text="Frame rate of the probe as encoded.", null=True),
        ),
    ]
