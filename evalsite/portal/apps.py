from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "evalsite.portal"
    label = "portal"
    verbose_name = "Portal (where the apps meet)"
