"""The Django layer of :mod:`fairness` (app label ``fairness``): face-quality scores,
the fairness report section, views, tasks, commands and migrations. The measures live in
the parent package and never import anything from here."""
