"""The strong automated adversary (seeds/000_0b74979cb8a3f1c3.txt, "A False Sense of
Privacy", sections 4-5): closed-set identification with naive, parrot and %-parrot
attackers, several conceptually different recognizers, the worst case over them, chance
level, identity-subset selection, reversal and fine-tuned attackers, verification curves.
Django-free; the Django layer lives in ``automated/django_app/attack_*.py``.

Modules: ``protocol`` (split, accuracy, chance level), ``crossvideo`` (the headline
protocol for video: folds over videos, attacker's own videos), ``attackers`` (attacker knowledge),
``recognizers`` (face recognizers as sklearn estimators; ``finetune``: dlib's face ResNet
fine-tuned on the attacker's crops), ``reversal`` (the restorer of the reversal attacker),
``verification`` (genuine/impostor scores, DET/ROC, EER, FNMR@FMR, CMC), ``selection`` (identity subsets,
section 4.2.3), ``suite`` (``run_attack_suite``, ``worst_case``), ``faces`` (building
``AttackData`` from face images and clear/masked video pairs).
"""
