"""Celery tasks of the attack evaluation."""
