"""``python manage.py attack <submission_id> [--attackers ...] [--recognizers ...] [--selection ...] [--stride N] [--n-folds K]``.

Starts the run through ``dispatch.start_run`` (face crops per masked video, shared by the
workers when a broker is configured, then the suite; in this process otherwise) and, with
a broker, prints its progress until it finishes (``--no-wait``: return at once;
``run_cli.start_and_follow``, shared with ``evaluate``).
"""

from django.core.management.base import BaseCommand

from automated.attack.attackers import ATTACKERS, DEFAULT_ATTACKERS
from automated.attack.recognizers import FACE_RECOGNIZERS
from automated.attack.selection import SELECTION_STRATEGIES
from automated.django_app import run_cli
from automated.django_app.attack_service import DEFAULT_RECOGNIZERS, attack_summary
from evalsite import dictionary


class Command(BaseCommand):
    help = "Run the attack suite (naive/parrot attackers x recognizers) against a submission."

    def add_arguments(self, parser):
        run_cli.add_common_arguments(parser)
        parser.add_argument(
            "--attackers",
            nargs="+",
            default=list(DEFAULT_ATTACKERS),
            choices=list(ATTACKERS),
            help="attacker knowledge: clear = clear-on-clear bound, naive = trained on clear, "
            "parrot = trained on masked, parrot_25/50/75 = that %% of training masked, "
            "reversal = a restorer trained on (masked, clear) pairs undoes the masking first "
            f"(default: {' '.join(DEFAULT_ATTACKERS)})",
        )
        parser.add_argument(
            "--recognizers",
            nargs="+",
            default=list(DEFAULT_RECOGNIZERS),
            choices=list(FACE_RECOGNIZERS),
            help="dlib_svm/dlib_knn = pretrained dlib embedding + classifier, lbph = local "
            "binary patterns, eigenfaces = PCA + SVM, cnn = small CNN trained from scratch "
            f"(default: {' '.join(DEFAULT_RECOGNIZERS)})",
        )
        parser.add_argument(
            "--selection",
            nargs="+",
            default=["all"],
            choices=["all", *SELECTION_STRATEGIES],
            help="identity subsets (seeds/000 section 4.2.3): all identities, or subsets of "
            "halving size chosen by each strategy (default: all)",
        )
        parser.add_argument("--stride", type=int, default=5, help="use every N-th frame (default 5)")
        parser.add_argument(
            "--gap",
            type=int,
            default=10,
            help="frames left out around a single-video identity's test segment (default 10)",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of the splits and models (default 0)")
        parser.add_argument(
            "--n-folds",
            type=int,
            default=None,
            help="cross-video folds: k >= 2 folds by video (default: leave one video out)",
        )
        parser.add_argument(
            "--declared-attacker",
            default="parrot",
            choices=[a for a in ATTACKERS if a != "clear"],
            help="the headline attacker's knowledge (its recognizer is chosen on held-out development "
            "identities; VoicePrivacy 2024's single ranking attacker; default parrot)",
        )
        parser.add_argument(
            "--allow-incomplete",
            action="store_true",
            help="attack a submission that lacks some masked videos",
        )

    def handle(
        self,
        *args,
        submission_id,
        attackers,
        recognizers,
        selection,
        stride,
        gap,
        seed,
        n_folds,
        declared_attacker,
        allow_incomplete,
        no_wait,
        **options,
    ):
        run = run_cli.start_and_follow(
            self,
            "attack",
            submission_id,
            no_wait=no_wait,
            attackers=attackers,
            recognizers=recognizers,
            selection=selection,
            stride=stride,
            gap=gap,
            seed=seed,
            n_folds=n_folds,
            declared_attacker=declared_attacker,
            allow_incomplete=allow_incomplete,
        )
        if run is None:
            return
        summary = attack_summary(run)
        if summary["worst_case_accuracy"] is None:
            self.stdout.write(f"  no worst case: {summary['no_worst_case']}")
            return

        def shown(key: str, value=None) -> str:  # the data dictionary's precision, as in CSV reports
            return dictionary.shown(f"attack.{key}", summary[key] if value is None else value, "summary")

        if summary.get("declared_accuracy") is not None:
            self.stdout.write(
                f"  declared attacker {summary['declared_recognizer']} x {summary['declared_attacker']}: "
                f"{shown('declared_accuracy')} [{shown('declared_ci_low')}, {shown('declared_ci_high')}] on "
                f"{summary['declared_n_tested_identities']} tested identities (chosen on "
                f"{summary['declared_n_development_identities']} others); worst case of "
                f"{summary['worst_case_n_pairs']} pairs below"
            )
        elif summary.get("declared_unavailable"):
            self.stdout.write(f"  no declared figure: {summary['declared_unavailable']}")
        bound = summary["clear_bound"]
        self.stdout.write(
            f"  worst case {shown('worst_case_accuracy')} ({summary['worst_case_recognizer']} x "
            f"{summary['worst_case_attacker']}), chance {shown('chance_level')}, "
            f"clear bound {'not run' if bound is None else shown('clear_bound')}"
        )
        for record in summary["table"]:
            accuracy = shown("worst_case_accuracy", record["accuracy"])
            self.stdout.write(f"  {record['recognizer']:12} {record['attacker']:10} {accuracy}")
        self.stdout.write(
            f"  face crops {shown('extraction_s')} s, training and testing {shown('training_s')} s"
        )
