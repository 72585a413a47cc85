"""Data generation: the affordance model's part-labelled clouds (and, later, demonstrations)."""
