"""The vocabulary every afford package shares.

Ontology, intent and cloud types, grasp candidates, robot descriptions, registries and
configuration. Nothing here imports another afford package (tests/test_import_layers.py).
"""
