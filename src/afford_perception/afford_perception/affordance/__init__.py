"""Open-vocabulary 3D affordance: data set, vocabulary and model.

- ``vocabulary``: affordance phrasings ("the grip", "the spout"), their seen / unseen split, and
  the target mask of an affordance on a labelled cloud (from the ontology).
- ``dataset``: generation of the training and held-out splits from the procedural library,
  and ``load`` to read a split back.
- ``model``: the point encoder matched to text embeddings (imports torch; import it only where
  the model is needed).

Nothing is imported here, so ``import afford_perception.affordance.vocabulary`` stays cheap.
"""
