"""Counterfactual evaluation of the selection layer (AFFORD-X's protocol, issue 5).

For a scene, one content-hashed candidate set (affordance-guided and generic antipodal grasps)
is built, every candidate is executed from the identical saved start state to the task's
success check, and every selection method is applied to the same set without seeing those
outcomes; a method's success in the scene is the outcome of the candidate it selected.

Modules: ``suites`` (sentences per suite), ``candidate_sets`` (building and hashing the set),
``methods`` (the baselines and the AFFORD-X factorial), ``counterfactual`` (executing every
candidate and writing the scene record), ``stats`` (Wilson intervals, paired bootstrap).
"""
