"""trials 0006: items of masked videos replaced before ``Item.superseded_at`` existed get it."""

from datetime import UTC, datetime

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# With the evalsite migration 0006 depends on, so the historical evalsite models match the tables.
BEFORE = [("trials", "0005_trial_state_stills_rated_submissions"), ("evalsite", "0009_team_campaign")]
AFTER = [("trials", "0006_item_superseded_at")]


def test_the_migration_stamps_items_of_replaced_masked_videos_with_the_replacement_time(transactional_db):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        get = old.get_model
        campaign = get("evalsite", "Campaign").objects.create(name="One", slug="one")
        identity = get("evalsite", "Identity").objects.create(campaign=campaign, code="ID01")
        video = get("evalsite", "SourceVideo").objects.create(
            campaign=campaign, identity=identity, name="clip", file="clip.mp4"
        )
        team = get("evalsite", "Team").objects.create(campaign=campaign, name="Team A")
        submission = get("evalsite", "Submission").objects.create(campaign=campaign, team=team, name="m1")
        masked = get("evalsite", "MaskedVideo")._base_manager
        replaced_at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
        first = masked.create(
            submission=submission, source_video=video, file="a.mp4", current=False, superseded_at=replaced_at
        )
        second = masked.create(submission=submission, source_video=video, file="b.mp4")
        Item = get("trials", "Item")
        items = {
            name: Item.objects.create(
                campaign=campaign, source_video=video, masked_video=m, task="identity", target_count=5
            )
            for name, m in (("clear", None), ("replaced", first), ("current", second))
        }

        executor.loader.build_graph()
        executor.migrate(AFTER)
        Item = executor.loader.project_state(AFTER).apps.get_model("trials", "Item")
        stamps = {name: Item.objects.get(pk=item.pk).superseded_at for name, item in items.items()}
        assert stamps == {"clear": None, "replaced": replaced_at, "current": None}
    finally:
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
