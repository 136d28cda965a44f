from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "evalsite.portal"
    label = "portal"
    verbose_name = "Portal (where the apps meet)"

    def ready(self):
        # The organizer's leaderboard and its figures, and what a team's submission page
        # reads, computed into the cache when a campaign's runs finish.
        from evalsite.report_cache import register_warmer

        from .leaderboard import warm_leaderboard, warm_video_bars
        from .team_views import warm_team_pages

        register_warmer(warm_leaderboard)
        register_warmer(warm_team_pages)
        register_warmer(warm_video_bars)
