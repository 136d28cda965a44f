"""Differential performance measures (Gini, SQFR, CSQFR, LWM, MDG) as pure functions.

Source: seeds/003_f24e77013896bd33.txt ("Fairness measures for biometric quality
assessment"). Importing this package never imports Django."""
