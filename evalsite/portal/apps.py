from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "evalsite.portal"
    label = "portal"
    verbose_name = "Portal (where the apps meet)"

    def ready(self):
        # The organizer's leaderboard, computed into the cache when a campaign's runs finish.
        from evalsite.report_cache import register_warmer

        from .leaderboard import warm_leaderboard

        register_warmer(warm_leaderboard)
