"""The portal: the one place where the apps meet.

The catalogue (``evalsite``: campaigns, videos, submissions, validation, storage, the
reports registry) imports no app; the apps (``trials``, ``automated.django_app``,
``fairness.django_app``) import the catalogue, never each other, and plug into it through
the registries they fill in their ``AppConfig.ready()`` (``evalsite.reports``,
``evalsite.staleness``, ``evalsite.plugins``). What needs several apps at once lives here:
the URL root, the REST API router, the leaderboard and team pages, the demo and the
commands that combine apps. Nothing below imports this package (import contracts in
pyproject.toml, ``make lint``).
"""
