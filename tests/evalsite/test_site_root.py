"""The site root: `make demo` prints http://127.0.0.1:8000 and the admin links "View site" to /."""

from django.contrib.auth import get_user_model


def test_root_sends_visitors_to_the_organizer_login(client, db):
    response = client.get("/", follow=True)
    assert response.redirect_chain[0] == ("/organizer/", 302)
    assert response.request["PATH_INFO"] == "/admin/login/"
    assert response.status_code == 200


def test_root_and_view_site_open_the_organizers_campaign_list(client, campaign):
    organizer = get_user_model().objects.create_user("org", password="pw-12345", is_staff=True)
    campaign.organizers.add(organizer)
    client.force_login(organizer)
    admin_index = client.get("/admin/")
    assert b'href="/">View site' in admin_index.content
    response = client.get("/", follow=True)
    assert response.redirect_chain == [("/organizer/", 302)]
    assert campaign.name in response.content.decode()
