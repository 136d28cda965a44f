"""Django models for attack-suite runs and results (naive/parrot attackers)."""
