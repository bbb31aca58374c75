"""In Chromium: a new shop imports its own intents (the pawpantry development set,
tierdesk-intents/1) and retrains; the admin's retraining page shows that shop's own
out-of-scope curve, measured over leave-intents-out folds, and its calibrated point in
use (oos_curve_e2e.mjs).

The server is real (Daphne) on a database of its own, with sentence embeddings on.
Writes docs/admin-oos-curve.png when TIERDESK_DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .live import REPO, LiveServer, _manage, live_server_run, server_env

pytestmark = pytest.mark.browser

SCRIPT = Path(__file__).with_name("oos_curve_e2e.mjs")
ADMIN = (
    "from django.contrib.auth import get_user_model; U = get_user_model();"
    "U.objects.filter(username='oos_admin').exists() or "
    "U.objects.create_superuser('oos_admin', 'o@example.com', 'oos_admin')"
)
# The shop's intents replace the demo's, through the importer and the retrain service.
NEW_SHOP = (
    "import json;"
    "from bench.router_shop import shop_load;"
    "from routing.interchange import intents_import;"
    "from routing.models import Intent;"
    "from routing.services import router_model_train;"
    "from routing.versioning import router_version_get;"
    "Intent.objects.all().delete();"
    "intents_import(json.dumps(shop_load('pawpantry')[0]), fmt='json');"
    "router_model_train(version=router_version_get().version, trained_by='browser test')"
)
EMBEDDINGS = {"TIERDESK_ROUTER_EMBEDDINGS": "true", "TIERDESK_ROUTER_RETRAIN_ASYNC": "false"}


@pytest.fixture(scope="module")
def shop_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("daphne-oos")
    with live_server_run(tmp, name="oos", env_extra=EMBEDDINGS, warm_up=False) as server:
        env = server_env(server.database_url, EMBEDDINGS)
        _manage(env, server.log, "shell", "-c", ADMIN)
        _manage(env, server.log, "shell", "-c", NEW_SHOP)
        yield server


def test_retraining_page_shows_the_new_shops_own_curve(
    browser_tools: str, shop_server: LiveServer, tmp_path: Path
) -> None:
    shot = (
        REPO / "docs" / "admin-oos-curve.png"
        if os.environ.get("TIERDESK_DOCS_SCREENSHOTS")
        else tmp_path / "admin-oos-curve.png"
    )
    cmd = [
        browser_tools,
        str(SCRIPT),
        "--base",
        shop_server.url,
        "--user",
        "oos_admin",
        "--password",
        "oos_admin",
        "--screenshot",
        str(shot),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    if proc.returncode != 0 or not result.get("ok"):
        pytest.fail(
            f"out-of-scope curve scenario failed: {result.get('error') or proc.stdout[-2000:]}\n"
            f"stderr: {proc.stderr[-2000:]}\n"
            f"server log:\n{shop_server.log.read_text(errors='replace')[-3000:]}"
        )
    assert "The classifier is trained on these examples" in result["status"], result
    assert "460 examples of 23 intents" in result["status"], result
    assert "leaving a different quarter of your intents out" in result["calibration"], result
    assert result["chart_points"] == result["rows"] == 39, result
    assert not result["errors"], result
    assert shot.exists()
