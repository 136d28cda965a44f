"""The Django layer of :mod:`automated` (app label ``automated``): run and result models,
services, Celery tasks, reports, admin, commands and migrations. The science lives in the
parent package and never imports anything from here."""
