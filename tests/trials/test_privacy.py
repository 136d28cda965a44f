"""Nothing a rater can fetch reveals the answer: no identity code, video name or stored name.

Walks a whole session (join, consent, instructions, practice, identity, action and catch
trials, completion) and fetches every page, JSON answer and media URL, checking bodies,
headers and the metadata inside the served PNGs and MP4s.
"""

import json
import re
import subprocess
import zlib
from pathlib import PurePosixPath

from django.test import Client

from automated.video import ffmpeg_executable
from evalsite.models import GalleryImage, Identity, MaskedVideo, SourceVideo
from trials.models import GalleryCrop

RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
CHOICE = re.compile(r'data-choice="([^"]+)"')
MEDIA = re.compile(r'src="(/m/[^"]+)"')
ALLOWED_MP4_TAGS = {"major_brand", "minor_version", "compatible_brands", "encoder"}


def secrets_of(campaign) -> set[str]:
    """Every string that would give away an answer or link media to the catalogue."""
    secrets = set()
    for identity in Identity.objects.filter(campaign=campaign):
        secrets.add(identity.code)
    for image in GalleryImage.objects.filter(identity__campaign=campaign):
        secrets |= {image.token, image.original_name, PurePosixPath(image.image.name).stem}
    for video in SourceVideo.objects.filter(campaign=campaign):
        secrets |= {video.name, video.token, PurePosixPath(video.file.name).stem}
        if video.web_file:
            secrets.add(PurePosixPath(video.web_file.name).stem)
    for video in MaskedVideo.objects.filter(submission__campaign=campaign):
        secrets |= {video.token, PurePosixPath(video.file.name).stem, PurePosixPath(video.web_file.name).stem}
    for crop in GalleryCrop.objects.filter(gallery_image__identity__campaign=campaign):
        secrets.add(PurePosixPath(crop.file.name).stem)
    return {s for s in secrets if s}


def png_chunk_types(data: bytes) -> list[str]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    types, offset = [], 8
    while offset < len(data):
        length = int.from_bytes(data[offset : offset + 4], "big")
        kind = data[offset + 4 : offset + 8].decode("ascii")
        chunk = data[offset + 8 : offset + 8 + length]
        assert zlib.crc32(data[offset + 4 : offset + 8] + chunk) == int.from_bytes(
            data[offset + 8 + length : offset + 12 + length], "big"
        )
        types.append(kind)
        offset += 12 + length
    return types


def mp4_metadata(path) -> dict:
    result = subprocess.run(
        [ffmpeg_executable(), "-v", "error", "-i", str(path), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
        check=True,
    )
    pairs = [line.split("=", 1) for line in result.stdout.splitlines()[1:] if "=" in line]
    return dict(pairs)


def test_no_rater_reachable_byte_reveals_the_answer(grid_campaign, tmp_path):
    client = Client()
    fetched: list[tuple[str, bytes, str]] = []  # (url, body, headers)

    def fetch(method, url, *args, **kwargs):
        response = getattr(client, method)(url, *args, **kwargs)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        fetched.append((url, body, headers))
        return response, body

    fetch("get", f"/join/{grid_campaign.join_code}/")
    fetch("post", f"/join/{grid_campaign.join_code}/", {"participant_code": "P-privacy"})
    fetch("get", "/session/")
    fetch("post", "/session/consent/", {"agree": "yes"})
    fetch("get", "/session/")
    fetch("post", "/session/start/")
    media_kinds = set()
    for _ in range(30):
        _, page = fetch("get", "/session/")
        html = page.decode()
        if "completion-code" in html:
            break
        for url in MEDIA.findall(html):
            response, body = fetch("get", url)
            fetch("get", url, HTTP_RANGE="bytes=0-99")
            media_kinds.add(response["Content-Type"])
            if response["Content-Type"] == "image/png":
                assert set(png_chunk_types(body)) <= {"IHDR", "IDAT", "IEND", "paDd"}  # paDd: random padding
            else:
                copy = tmp_path / "served.mp4"
                copy.write_bytes(body)
                assert set(mp4_metadata(copy)) <= ALLOWED_MP4_TAGS
        url = RESPOND.search(html).group(1)
        choice = CHOICE.findall(html)[-1]
        body = json.dumps({"choice": choice, "response_time_ms": 900, "replays": 0, "watch_time_ms": 3000})
        fetch("post", url, body, content_type="application/json")
        fetch("post", url, body, content_type="application/json")  # the duplicate answer too
    assert "completion-code" in html
    assert media_kinds == {"image/png", "video/mp4"}
    secrets = secrets_of(grid_campaign)
    assert len(secrets) > 50  # codes, names, tokens and stored file stems were all collected
    for url, body, headers in fetched:
        text = (url + "\n" + headers).encode() + b"\n" + body
        leaked = sorted(s for s in secrets if s.encode().lower() in text.lower())
        assert not leaked, f"{url} reveals {leaked}"
