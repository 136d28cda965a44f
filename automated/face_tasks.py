"""Celery tasks of the face evaluation."""
