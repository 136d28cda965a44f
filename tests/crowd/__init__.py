"""The crowd simulation harness (simulated raters through the real pages) and its GRID campaign."""
