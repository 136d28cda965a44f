"""The photo benchmark's quick mode end to end (``python -m benchmarks attack_photos --quick``),
on 24 London identities (7 development, 17 tested) with two baselines."""

from __future__ import annotations

import pytest

from automated.attack.recognizers import EMBEDDING_CACHE


@pytest.mark.slow
def test_quick_photo_benchmark(monkeypatch, tmp_path, capsys):
    from benchmarks.bench_attack_photos import run

    monkeypatch.setenv("DEID_BENCH_ATTACK_DIR", str(tmp_path))
    monkeypatch.setattr(EMBEDDING_CACHE, "directory", tmp_path / "embeddings")
    (tmp_path / "embeddings").mkdir()
    rows = {row["baseline"]: row for row in run(["--quick", "--baselines", "identity,block_permute_keyed"])}
    printed = capsys.readouterr().out
    unmasked, keyed = rows["identity"], rows["block_permute_keyed"]
    # unmasked: every tested probe identified by the declared parrot; verification separates
    assert unmasked["declared_acc"] == "1.000 [1.000, 1.000]"
    assert unmasked["declared"].endswith("x parrot") and unmasked["pairs"] == 4
    assert unmasked["ver_eer"] == "0.000 [0.000, 0.000]" and unmasked["link_eer"] == 0.0
    assert unmasked["link_p"] < 0.01
    assert unmasked["chance"] == pytest.approx(1 / 17)
    # fresh per-photo block permutation: near chance, the linking attacker not above chance
    assert keyed["worst_case"] <= 0.15 and keyed["link_p"] > 0.05
    assert "declared attacker: parrot with the recognizer strongest on 7 development" in printed
    assert "privacy fairness of the declared attacker" in printed
    assert "too wide to mean much" in printed  # small ethnicity groups are flagged
    assert (tmp_path / "photos").is_dir()  # scaled photos and masked crops kept for the next run
