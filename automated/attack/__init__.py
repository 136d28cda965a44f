"""The strong automated adversary (seeds/000_0b74979cb8a3f1c3.txt, "A False Sense of
Privacy", sections 4-5): closed-set identification with naive, parrot and %-parrot
attackers, several conceptually different recognizers, the worst case over them, chance
level, and identity-subset selection. Django-free; the Django layer lives in
``automated/attack_*.py``.

Modules: ``protocol`` (split, accuracy, chance level), ``crossvideo`` (the headline
protocol for video: folds over videos, attacker's own videos), ``attackers`` (attacker knowledge),
``recognizers`` (face recognizers as sklearn estimators), ``selection`` (identity subsets,
section 4.2.3), ``suite`` (``run_attack_suite``, ``worst_case``), ``faces`` (building
``AttackData`` from face images and clear/masked video pairs).
"""
