"""The documentation's generated pages (docs/hooks.py) cover what the code has.

``make docs`` builds the site with ``--strict``; these tests check the generated parts
without a build: every data-dictionary entry, every validation code and every public
science module appears on its page.
"""

import importlib.util
import re
from pathlib import Path

from evalsite import dictionary, validation

ROOT = Path(__file__).resolve().parents[1]


def load_hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dictionary_page_has_a_row_per_registered_entry():
    page = load_hooks().dictionary_markdown()
    rows = re.findall(r"^\| `([^`]+)` \|", page, re.M)
    names = [entry.name for entry in dictionary.entries()]
    assert len(names) > 100 and sorted(rows) == sorted(names)
    assert "| `face_match_rate` |" in page


def test_validation_codes_page_has_every_code_and_marks_whole_upload_failures():
    page = load_hooks().validation_codes_markdown()
    assert re.findall(r"^\| `(\w+)` \|", page, re.M) == list(validation.CODES)
    assert "| `not_a_zip` | the upload is not a zip archive | yes |" in page
    assert "| `bad_crc` | the member's data do not match its CRC-32 checksum (damaged zip) |  |" in page


def test_every_public_science_module_is_on_an_api_page():
    hooks = load_hooks()
    documented = set()
    for _, title, package in hooks.API_PACKAGES:
        documented |= set(re.findall(r"^::: (\S+)$", hooks.api_markdown(title, package), re.M))
    expected = set()
    for package in ("automated", "fairness"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if any(p.startswith("_") and p != "__init__" for p in parts) or set(parts) & hooks.SKIP_PARTS:
                continue
            if parts[-1] == "__init__":
                if not path.read_text().strip():
                    continue
                parts = parts[:-1]
            expected.add(".".join(parts))
    assert "automated.attack.crossvideo" in expected and "fairness.measures" in expected
    assert documented == expected
