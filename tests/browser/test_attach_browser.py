"""A shopper shows the problem with a photo, an agent sees it (attach_e2e.mjs, headless
Chromium against a real Daphne server; the shopper on a desktop and on a 390x844 phone):
the paperclip is in view by the message box, a text file named .png is refused in words
with the typing kept, the photo shows in the widget and in the desk (the desk's own,
staff-only link), a second one reaches the open desk live, and a reload redraws both.
The desktop run writes docs/widget-attachment.png and docs/desk-attachment.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from .live import REPO, LiveServer, _manage, node_scenario, server_env

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("attach_e2e.mjs")
AGENT = (
    "from django.contrib.auth import get_user_model; from django.contrib.auth.models import Group;"
    "U = get_user_model();"
    "u = U.objects.filter(username='photo_agent').first() or U.objects.create_user("
    "'photo_agent', password='photo_agent', is_staff=True, first_name='Rosa');"
    "u.groups.add(Group.objects.get(name='support agents'))"
)


def parcel(path: Path, fmt: str, dent: tuple[int, int]) -> Path:
    """A picture of a dented cardboard box (with a GPS EXIF block, as a phone writes it)."""
    image = Image.new("RGB", (640, 480), (226, 232, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 360, 640, 480), fill=(150, 150, 160))
    draw.polygon([(150, 170), (470, 170), (510, 380), (110, 380)], fill=(196, 150, 98))
    draw.polygon([(150, 170), (470, 170), (430, 110), (190, 110)], fill=(214, 172, 120))
    draw.rectangle((290, 110, 330, 380), fill=(230, 214, 170))
    draw.ellipse((dent[0] - 60, dent[1] - 40, dent[0] + 60, dent[1] + 40), fill=(150, 108, 66))
    exif = Image.Exif()
    exif.get_ifd(0x8825).update({1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 36.0)})
    image.save(path, fmt, exif=exif.tobytes())
    return path


@pytest.mark.parametrize(("name", "width", "height"), [("desktop", 1280, 800), ("phone", 390, 844)])
def test_a_shoppers_photo_reaches_the_desk(
    browser_tools: str,
    daphne_server: LiveServer,
    tmp_path: Path,
    name: str,
    width: int,
    height: int,
) -> None:
    _manage(server_env(daphne_server.database_url), daphne_server.log, "shell", "-c", AGENT)
    photo = parcel(tmp_path / "IMG_2041.jpg", "JPEG", (400, 300))
    photo2 = parcel(tmp_path / "IMG_2042.png", "PNG", (200, 250))
    not_photo = tmp_path / "receipt.png"
    not_photo.write_text("Order #W2611340, total 49.00\n" * 20)
    widget_shot, desk_shot = tmp_path / "widget.png", tmp_path / "desk.png"
    result = node_scenario(
        browser_tools,
        SCRIPT,
        daphne_server,
        name,
        "--agent",
        "photo_agent",
        "--password",
        "photo_agent",
        "--photo",
        str(photo),
        "--photo2",
        str(photo2),
        "--not-photo",
        str(not_photo),
        "--width",
        str(width),
        "--height",
        str(height),
        "--widget-screenshot",
        str(widget_shot),
        "--desk-screenshot",
        str(desk_shot),
    )
    assert result["errors"] == [], result
    assert result["clip_in_view"] and result["clip_label"] == "Attach a photo", result
    assert "JPEG, PNG, WebP or HEIC" in result["refused_text"], result
    assert result["draft_after_refusal"] == result["draft_at_end"] == result["draft_after_photo"]
    assert result["draft_at_end"] == "The box was crushed on one side"
    # The shopper's link is signed and not the desk's; the desk's is staff only.
    assert "/attachments/" in result["shopper_photo_src"]
    assert "/desk/" not in result["shopper_photo_src"]
    assert result["desk_photo_href"].startswith("/desk/attachments/")
    assert result["desk_link_anonymous_status"] == 302
    assert result["widget_at_end"], result  # photos loading don't push the reply out of view
    assert result["scenario_s"] < 60, result
    if name == "desktop":
        shutil.copyfile(widget_shot, REPO / "docs" / "widget-attachment.png")
        shutil.copyfile(desk_shot, REPO / "docs" / "desk-attachment.png")
