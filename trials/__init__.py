"""Human evaluation: raters, sessions, trials, responses, assignment, scoring."""
